import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/http.js';
import { count } from '../helpers/bookings.js';
import { holdCar } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { createDashboard } from '../../dashboards/server.js';
import { JOB_KINDS } from '../../shared/domain/jobs.js';
import { QUEUES } from '../../shared/queues/registry.js';

// What an operator does in bull-board, through its HTTP API with the dashboard's own auth and cross-site rules
// (Basic credentials, X-Requested-With): retry, promote, obliterate, add a job. Every action is safe: a job acts only
// through its row, so a retried or promoted job does its work at most once, and what is removed is armed again from
// PostgreSQL. Also: a retained job id that collides with a new obligation's, and a provider 429 with Retry-After.

let gateway: Gateway;
let h: Harness;
let board: { base: string; close: () => Promise<unknown>; server: Server };

beforeAll(async () => {
  gateway = await startGateway();
  h = await startHarness({
    workers: true,
    env: {
      HOLD_RATE_LIMIT: '100000', DASHBOARD_USER: 'ops', DASHBOARD_PASSWORD: 'pw',
      NOTIFY_WEBHOOK_URL: gateway.url,
      // Provider calls 312 ms apart (default 62 ms): the 429 test's refused call must be answered before the next
      // slot, which a loaded CI machine (the bench smokes beside it) could not always do in 62 ms.
      PSP_RATE_LIMIT: '4',
    },
  });
  const d = await createDashboard(h.config);
  const server = d.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  board = { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/queues/api/queues`, close: d.close, server };
}, 60_000);
afterEach(async () => {
  gateway.refusing = false;
  await sandbox(h).resetFaults();
});
afterAll(async () => {
  board?.server.close();
  await board?.close();
  await h?.close();
  await gateway?.close();
});

/** A call to bull-board's API as a script does it: credentials, and X-Requested-With (the dashboard's CSRF rule). */
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${board.base}${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}`, 'x-requested-with': 'test', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}
const q = (kind: keyof typeof QUEUES) => encodeURIComponent(QUEUES[kind].name);
const refundRow = async (id: number) => (await h.sql(`SELECT status, attempts, job_gen, last_error FROM refund WHERE id = $1`, [id])).rows[0];
/** A PENDING refund of a booking of its own, as the database has it (no job yet). */
async function pendingRefund(o: { dueInS?: number } = {}): Promise<{ id: number; bookingId: number }> {
  const b = await holdCar(h);
  const { rows } = await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, next_attempt_at)
    VALUES ($1, $3, 500, 'VND', 'test', now() + make_interval(secs => $2)) RETURNING id::int`, [b.id, o.dueInS ?? 0, `pi_op_${b.id}`]);
  return { id: rows[0].id, bookingId: b.id };
}

describe('bull-board, as an operator uses it', () => {
  it('lists the six queues by display name, with descriptions; each job links to its booking\'s page', async () => {
    const b = await holdCar(h);
    const { status, json } = await api('GET', '');
    expect(status).toBe(200);
    expect(json.queues.map((x: { name: string }) => x.name).sort()).toEqual(JOB_KINDS.map((k) => `{${k}}`).sort());
    for (const x of json.queues) {
      const kind = x.name.slice(1, -1) as keyof typeof QUEUES;
      expect(x.displayName).toBe(QUEUES[kind].displayName);
      expect(x.description).toBe(QUEUES[kind].description);
    }
    const job = await api('GET', `/${q('expiry')}/expire-${b.id}-g0`);
    expect(job.status).toBe(200);
    expect(job.json.job.externalUrl).toEqual({ displayText: `Booking ${b.id}`, href: `/admin/bookings/${b.id}` });
    expect(job.json.job.data.bookingId).toBe(b.id);
  });

  it('Retry of a failed refund job pays it once; the job shows its attempts, reason and per-attempt log', async () => {
    const r = await pendingRefund();
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 401, times: 1 });
    // Its job with a single attempt, so that one refusal fails it.
    const added = await api('POST', `/${q('refunds')}/add`, {
      name: 'refund', data: { bookingId: r.bookingId, refundId: r.id, gen: 0, dueAt: Date.now() },
      options: { jobId: `refund-${r.id}-g0`, attempts: 1, backoff: { type: 'obligation' } },
    });
    expect(added.status, JSON.stringify(added.json)).toBe(200);
    await waitFor(async () => (await h.queues.refunds.getJobState(`refund-${r.id}-g0`)) === 'failed', 10_000, 50);
    const failed = (await api('GET', `/${q('refunds')}/refund-${r.id}-g0`)).json.job;
    expect(failed.failedReason).toMatch(/401/);
    const logs = (await api('GET', `/${q('refunds')}/refund-${r.id}-g0/logs`)).json;
    expect(JSON.stringify(logs)).toMatch(/attempt 1: provider rejected: 401.*next attempt in 1 s/);
    expect(await refundRow(r.id)).toMatchObject({ status: 'PENDING', attempts: 1 });

    expect((await api('PUT', `/${q('refunds')}/refund-${r.id}-g0/retry`)).status).toBe(204);
    await waitFor(async () => (await refundRow(r.id)).status === 'SUCCEEDED', 10_000, 50);
    await waitFor(async () => (await h.queues.refunds.getJobState(`refund-${r.id}-g0`)) === 'completed', 10_000, 50);
    expect((await h.queues.refunds.getJob(`refund-${r.id}-g0`))!.returnvalue).toBe('SUCCEEDED');
    expect(await refundRow(r.id)).toMatchObject({ job_gen: 0 });
    // Retried again by hand: nothing is owed, nothing happens.
    expect((await api('PUT', `/${q('refunds')}/refund-${r.id}-g0/retry`)).status).toBe(204);
    await waitFor(async () => (await h.queues.refunds.getJobState(`refund-${r.id}-g0`)) === 'completed', 10_000, 50);
    expect((await h.queues.refunds.getJob(`refund-${r.id}-g0`))!.returnvalue).toBe('already_settled');
    expect(await sandbox(h).refundsFor(r.bookingId)).toHaveLength(1);
  });

  it('Promote of a delayed refund job: attempted now, paid once', async () => {
    const r = await pendingRefund({ dueInS: 3600 });
    await h.deps.jobs.enqueue([{ kind: 'refunds', bookingId: r.bookingId, refundId: r.id, gen: 0, runAt: new Date(Date.now() + 3_600_000) }]);
    await h.deps.producers!.settle(); // due in an hour: added lazily
    expect(await h.queues.refunds.getJobState(`refund-${r.id}-g0`)).toBe('delayed');
    const promoted = Date.now();
    expect((await api('PUT', `/${q('refunds')}/refund-${r.id}-g0/promote`)).status).toBe(204);
    await waitFor(async () => (await refundRow(r.id)).status === 'SUCCEEDED', 10_000, 50);
    expect(Date.now() - promoted).toBeLessThan(5_000);
    expect(await sandbox(h).refundsFor(r.bookingId)).toHaveLength(1);
  });

  it('Obliterate of {notifications}: the reconciler arms every owed notification again, and each is sent once', async () => {
    gateway.refusing = true;
    const b = await holdCar(h);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await waitFor(async () => (await count(h, `SELECT 1 FROM notification WHERE booking_id = $1 AND attempts >= 1`, [b.id])) === 2, 10_000, 50);
    expect((await api('PUT', `/${q('notifications')}/pause`)).status).toBe(200);
    const gone = await api('PUT', `/${q('notifications')}/obliterate`, { force: true });
    expect(gone.status, JSON.stringify(gone.json)).toBe(200);
    expect(await h.queues.notifications.getJobCounts('delayed', 'waiting', 'active')).toEqual({ delayed: 0, waiting: 0, active: 0 });
    gateway.refusing = false;
    await waitFor(async () => (await count(h, `SELECT 1 FROM notification WHERE booking_id = $1 AND sent_at IS NOT NULL`, [b.id])) === 2, 15_000, 100);
    await sleep(1000);
    const keys = gateway.accepted.filter((a) => a.bookingId === b.id).map((a) => a.key);
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
  }, 30_000);

  it('a bogus job added by hand fails as unrecoverable and does nothing; its retained id collides with the next refund\'s, which is paid as g1', async () => {
    const next = Number((await h.sql(`SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS n FROM refund_id_seq`)).rows[0].n);
    const bogus = await api('POST', `/${q('refunds')}/add`, { name: 'refund', data: { refund: 'all of it' }, options: { jobId: `refund-${next}-g0` } });
    expect(bogus.status).toBe(200);
    await waitFor(async () => (await h.queues.refunds.getJobState(`refund-${next}-g0`)) === 'failed', 10_000, 50);
    const failed = (await h.queues.refunds.getJob(`refund-${next}-g0`))!;
    expect(failed.failedReason).toMatch(/invalid job data/);
    expect(failed.attemptsMade).toBe(1); // unrecoverable: not retried
    // A refund that takes that id: its add after commit is a no-op (the failed job is retained) ...
    const b = await holdCar(h);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const { rows } = await h.sql(`SELECT id::int FROM refund WHERE booking_id = $1`, [b.id]);
    expect(rows[0].id).toBe(next);
    expect(await h.queues.refunds.getJobState(`refund-${next}-g0`)).toBe('failed');
    // ... and the reconciler finds the row owed and its job ended: a new generation, paid once.
    await waitFor(async () => (await refundRow(next)).status === 'SUCCEEDED', 20_000, 100);
    expect((await refundRow(next)).job_gen).toBe(1);
    await waitFor(async () => (await h.queues.refunds.getJobState(`refund-${next}-g1`)) === 'completed', 10_000, 50);
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
  }, 40_000);

  it('a provider 429 with Retry-After pauses the refunds queue that long and counts no attempt', async () => {
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 429, times: 1, retryAfterS: 2 });
    const [a, b] = [await pendingRefund({ dueInS: 3600 }), await pendingRefund({ dueInS: 3600 })];
    const since = Date.now();
    await h.deps.jobs.enqueue([a, b].map((r) => ({ kind: 'refunds' as const, bookingId: r.bookingId, refundId: r.id, gen: 0 })));
    await waitFor(async () => (await refundRow(a.id)).status === 'SUCCEEDED' && (await refundRow(b.id)).status === 'SUCCEEDED', 15_000, 50);
    // The row settles inside the job; BullMQ counts the attempt only once the job has completed.
    for (const r of [a, b]) await waitFor(async () => (await h.queues.refunds.getJobState(`refund-${r.id}-g0`)) === 'completed', 10_000, 50);
    const calls = (await sandbox(h).state()).calls.filter((c) => c.endpoint === 'refunds.create' && c.at >= since).map((c) => c.at).sort();
    // The refused call, then nothing from the queue for the Retry-After, then both paid.
    expect(calls).toHaveLength(3);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(1900);
    for (const r of [a, b]) {
      // One attempt each, the row's and BullMQ's alike (BullMQ counts the one that completed): the 429 counted none.
      expect((await refundRow(r.id)).attempts).toBe(1);
      expect((await h.queues.refunds.getJob(`refund-${r.id}-g0`))!.attemptsMade).toBe(1);
    }
  }, 30_000);
});
