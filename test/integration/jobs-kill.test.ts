import pg from 'pg';
import type { Job } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/http.js';
import { count, outboxOf, statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { kill9, privateRedis, startWorkerProcess, workerEnv, type PrivateRedis, type WorkerChild } from '../helpers/worker-processes.js';
import type { JobKind } from '../../shared/domain/jobs.js';

// Worker processes killed with -9 in the middle of a job, for each kind; a job that stalls twice; and the
// provider limit across processes. Real child processes (their Procfile entries), two of each kind that is killed,
// on a Redis of the test's own; a killed one is replaced, as `npm start` or a platform would.

const RATE = 5;
let gateway: Gateway;
let redis: PrivateRedis;
let h: Harness;
let env: Record<string, string>;
const children: WorkerChild[] = [];

beforeAll(async () => {
  redis = await privateRedis();
  gateway = await startGateway();
  h = await startHarness({
    env: {
      REDIS_URL: redis.url, HOLD_RATE_LIMIT: '100000', PAYMENT_GRACE_S: '120', LEASE_S: '3', JOB_LOCK_S: '2', PSP_RATE_LIMIT: String(RATE),
      NOTIFY_WEBHOOK_URL: gateway.url,
    },
  });
  env = workerEnv(h, redis.url);
  await Promise.all(['expiry', 'expiry', 'refunds', 'refunds', 'notifications'].map((n) => startWorkerProcess(n, env, children)));
}, 120_000);
afterEach(async () => {
  gateway.release();
  await sandbox(h).resetFaults();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await h?.close();
  redis?.client.disconnect();
  await redis?.stop();
  await gateway?.close();
});

/** The child whose worker has `job` active (its processedBy names the pid). */
const workingOn = (job: Job | undefined) => children.find((c) => c.exitCode === null && c.signalCode === null && job?.processedBy?.endsWith(`#${c.pid}`));
/** Waits until `id` is active in a live child (optionally one other than `not`); returns the child. */
async function activeIn(kind: JobKind, id: string, not?: WorkerChild): Promise<WorkerChild> {
  let child: WorkerChild | undefined;
  let seen = '';
  await waitFor(async () => {
    const job = await h.queues[kind].getJob(id);
    seen = `${job ? await job.getState() : 'missing'} by ${job?.processedBy}`;
    child = job && (await job.isActive()) ? workingOn(job) : undefined;
    return child !== undefined && child !== not;
  }, 20_000, 50).catch(() => { throw new Error(`${id} never active in a live process (last: ${seen})`); });
  return child!;
}
/** Kills `child` and starts another of its kind in its place (`started`: not awaited, the survivors carry on). */
async function killAndReplace(child: WorkerChild, name: string): Promise<{ started: Promise<WorkerChild> }> {
  await kill9(child);
  return { started: startWorkerProcess(name, env, children) };
}

describe('the provider limit holds across processes', () => {
  it(`50 refunds worked by 2 refunds processes at PSP_RATE_LIMIT=${RATE}: the provider sees at most ${RATE} refund calls a second`, async () => {
    const b = await holdCar(h);
    const { rows } = await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason)
      SELECT $1, 'pi_rate_' || i, 100 + i, 'VND', 'test' FROM generate_series(1, 50) i RETURNING id::int`, [b.id]);
    const started = Date.now();
    await h.deps.jobs.enqueue(rows.map((r) => ({ kind: 'refunds' as const, bookingId: b.id, refundId: r.id as number, gen: 0 })));
    await waitFor(async () => (await count(h, `SELECT 1 FROM refund WHERE booking_id = $1 AND status = 'PENDING'`, [b.id])) === 0, 60_000, 200);
    // Every call the refunds queue made (a POST that timed out under load is looked up, then maybe POSTed again).
    const state = await sandbox(h).state();
    const calls = state.calls.filter((c) => c.endpoint.startsWith('refunds.') && c.at >= started).map((c) => c.at).sort((x, y) => x - y);
    expect(calls.length).toBeGreaterThanOrEqual(50);
    // Each paid once.
    expect(new Set(state.refunds.filter((r) => r.reference === String(b.id)).map((r) => r.paymentIntentId)).size).toBe(50);
    expect(state.refunds.filter((r) => r.reference === String(b.id))).toHaveLength(50);
    // Per second of the provider's clock (as a provider counts), and over any sliding second: at most one more than
    // the limit. The gate spaces the slots 1/RATE s apart across processes; a sender that stalls after taking its
    // slot (a loaded machine) can send late, into the next second, next to that second's own calls. Twice the rate
    // (a gate per process, or none) fails both.
    const perSecond = new Map<number, number>();
    for (const t of calls) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
    let sliding = 0;
    for (let i = 0; i < calls.length; i++) sliding = Math.max(sliding, calls.filter((t) => t >= calls[i]! && t < calls[i]! + 1000).length);
    const seen = `calls (ms from the first): ${calls.map((t) => t - calls[0]!).join(' ')}`;
    expect(Math.max(...perSecond.values()), seen).toBeLessThanOrEqual(RATE + 1);
    expect(sliding, seen).toBeLessThanOrEqual(RATE + 1);
    // Both processes worked them.
    const workers = new Set((await h.queues.refunds.getJobs(['completed'], 0, 100)).map((j) => j.processedBy));
    expect(workers.size).toBe(2);
    expect((calls.at(-1)! - calls[0]!) / 1000).toBeGreaterThanOrEqual(calls.length / RATE - 2);
  }, 90_000);
});

describe('kill -9 in the middle of a job', () => {
  it('expiry: the process dies while its job waits on the hold\'s row; the reconciler of the other expires it within 1 s', async () => {
    const b = await holdCar(h);
    const lock = new pg.Client({ connectionString: h.config.DATABASE_URL });
    let replacement: Promise<WorkerChild> | undefined;
    await lock.connect();
    try {
      // Made due in a transaction that keeps the row locked: the job, promoted, waits on that lock mid-job.
      await lock.query('BEGIN');
      await lock.query(`UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() - interval '1 second' WHERE id = $1`, [b.id]);
      await (await h.queues.expiry.getJob(`expire-${b.id}-g0`))!.promote();
      const victim = await activeIn('expiry', `expire-${b.id}-g0`);
      replacement = (await killAndReplace(victim, 'expiry')).started;
    } finally {
      await lock.query('COMMIT').catch(() => {});
      await lock.end();
    }
    const released = Date.now();
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 5_000, 25);
    expect(Date.now() - released).toBeLessThan(1000);
    // Its job, stalled, runs again later and finds nothing to do; booking.expired was written once.
    await waitFor(async () => (await h.queues.expiry.getJobState(`expire-${b.id}-g0`)) === 'completed', 20_000, 200);
    expect((await outboxOf(h, b.id)).filter((e) => e.topic === 'booking.expired')).toHaveLength(1);
    await replacement;
  }, 90_000);

  it('a payment check stalls twice (its process killed twice mid-ask): g0 fails, visible; g1 expires the hold once; its intent is cancelled', async () => {
    const b = await holdCar(h);
    const intentId = await requestPay(h, b);
    await sandbox(h).setFaults({ apiDelayMs: 60_000 }); // the provider hangs: each check waits on it until killed
    // Expired, but its row not yet overdue: the promoted expiry job hands it to paycheck-g0. (A row overdue past the
    // reconciler's 500 ms grace with no check job yet is the reconciler's to take over, as generation 1.)
    await h.sql(`UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() + interval '3 seconds' WHERE id = $1`, [b.id]);
    await (await h.queues.expiry.getJob(`expire-${b.id}-g0`))!.promote();
    const id = `paycheck-${b.id}-g0`;
    const first = await activeIn('payment-checks', id);
    const leaseOf = async () => (await h.sql(`SELECT lease_token FROM booking WHERE id = $1`, [b.id])).rows[0].lease_token as string | null;
    const lease1 = await waitFor(leaseOf, 10_000, 50); // claimed: it asks the provider now
    const replaced = await killAndReplace(first, 'expiry');
    // Stalled, it runs again in another process once the lease is over, asks again (a new lease), and hangs again.
    await waitFor(async () => ![null, lease1].includes(await leaseOf()), 30_000, 100);
    const second = await activeIn('payment-checks', id, first);
    await replaced.started;
    const again = await killAndReplace(second, 'expiry');
    await waitFor(async () => (await h.queues['payment-checks'].getJobState(id)) === 'failed', 30_000, 100);
    expect((await h.queues['payment-checks'].getJob(id))!.failedReason).toMatch(/stalled more than allowable limit/);
    expect(await statusOf(h, b.id)).toBe('HOLD');
    await sandbox(h).resetFaults();
    // The reconciler sees the check owed and its job ended: a new generation takes over.
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 30_000, 100);
    expect((await h.sql(`SELECT job_gen FROM booking WHERE id = $1`, [b.id])).rows[0].job_gen).toBe(1);
    await waitFor(async () => (await h.queues['payment-checks'].getJobState(`paycheck-${b.id}-g1`)) === 'completed', 10_000, 100);
    expect((await outboxOf(h, b.id)).filter((e) => e.topic === 'booking.expired')).toHaveLength(1);
    await waitFor(async () => (await sandbox(h).state()).intents.find((i) => i.id === intentId)?.status === 'canceled', 20_000, 200);
    await again.started;
  }, 120_000);

  it('refunds: the process dies while the provider takes its POST; the refund is paid exactly once', async () => {
    const b = await holdCar(h);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    // The provider stalls the refund's creation 4 s, then creates it anyway (the caller cannot tell it did).
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 'timeout', times: 1, hangMs: 4000 });
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const refund = (await h.sql(`SELECT id::int FROM refund WHERE booking_id = $1`, [b.id])).rows[0].id as number;
    const victim = await activeIn('refunds', `refund-${refund}-g0`);
    await sleep(300);
    const replaced = await killAndReplace(victim, 'refunds');
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE id = $1`, [refund])).rows[0].status === 'SUCCEEDED', 45_000, 200);
    await sandbox(h).idle();
    await sleep(4500); // the stalled POST has been carried out by now
    // Settled by its next attempt (which looked it up before any POST) or by the refund's webhook, whichever came first.
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
    await replaced.started;
  }, 90_000);

  it('notifications: the process dies while the gateway holds its POST; sent again after the lease with the same key, once', async () => {
    gateway.hanging = true;
    const b = await holdCar(h);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await waitFor(async () => gateway.accepted.filter((a) => a.bookingId === b.id).length === 2, 15_000, 50);
    const firstKeys = gateway.accepted.filter((a) => a.bookingId === b.id).map((a) => a.key).sort();
    const victim = children.find((c) => /notifications/.test(c.spawnargs.join(' ')) && c.exitCode === null && c.signalCode === null)!;
    const replaced = await killAndReplace(victim, 'notifications');
    gateway.release();
    await replaced.started;
    await waitFor(async () => (await count(h, `SELECT 1 FROM notification WHERE booking_id = $1 AND sent_at IS NOT NULL`, [b.id])) === 2, 45_000, 200);
    await sleep(1000);
    const keys = gateway.accepted.filter((a) => a.bookingId === b.id).map((a) => a.key).sort();
    expect(keys).toEqual([...firstKeys, ...firstKeys].sort());
    expect(new Set(keys).size).toBe(2);
  }, 90_000);
});
