import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/http.js';
import { outboxOf, statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { privateRedis, startWorkerProcess, workerEnv, type PrivateRedis, type WorkerChild } from '../helpers/worker-processes.js';
import { jobsEnqueueFailed } from '../../shared/metrics/work.js';

// Redis loses what the processes use (CONTRACT "Jobs"): FLUSHALL mid-run, a restart without persistence, Redis down
// while a hold is placed. The four worker processes run as children (their Procfile entries) and the API in this
// process, all on a redis-server of the test's own; before each fault the test proves the processes are connected
// to it and their jobs are in it. Every kind's owed work must still happen, once, on time, and bull-board must show
// every owed job again within 10 s.

const HOLD_TTL_S = 5;
let gateway: Gateway;
let redis: PrivateRedis;
let h: Harness;
const children: WorkerChild[] = [];

beforeAll(async () => {
  redis = await privateRedis();
  gateway = await startGateway();
  h = await startHarness({
    env: {
      REDIS_URL: redis.url, HOLD_TTL_S: String(HOLD_TTL_S), PAYMENT_GRACE_S: '60', HOLD_RATE_LIMIT: '100000', LEASE_S: '3', JOB_LOCK_S: '3',
      NOTIFY_WEBHOOK_URL: gateway.url,
    },
  });
  const env = workerEnv(h, redis.url, { LOG_LEVEL: 'warn' });
  // "started" is logged at info; the rest at warn.
  await Promise.all(['expiry', 'refunds', 'notifications', 'maintenance'].map((n) => startWorkerProcess(n, { ...env, LOG_LEVEL: 'info' }, children)));
}, 120_000);
afterEach(async () => {
  gateway.refusing = false;
  await sandbox(h).resetFaults();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await h?.close();
  redis?.client.disconnect();
  await redis?.stop();
  await gateway?.close();
});

const prefix = () => h.config.QUEUE_PREFIX;
const jobKey = (queue: string, id: string) => `${prefix()}:{${queue}}:${id}`;
const gen = async (table: string, where: string, id: number) => (await h.sql(`SELECT job_gen FROM ${table} WHERE ${where} = $1`, [id])).rows[0].job_gen as number;
const expiredLag = async (b: Hold) => {
  const e = (await outboxOf(h, b.id)).find((r) => r.topic === 'booking.expired');
  return e ? new Date(e.payload.occurredAt).getTime() - b.holdExpiresAt.getTime() : null;
};
const waitExpired = (b: Hold, ms = 15_000) => waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', ms, 50)
  .catch(() => { throw new Error(`hold ${b.id} not expired; processes said:\n${children.map((c) => c.output().slice(-1500)).join('\n')}`); });
/** The holds a test keeps open far beyond the run: their deadline an hour away. */
async function longHolds(n: number): Promise<Hold[]> {
  const holds = await Promise.all(Array.from({ length: n }, () => holdCar(h)));
  await h.sql(`UPDATE booking SET hold_expires_at = now() + interval '1 hour', next_expiry_check_at = now() + interval '1 hour' WHERE id = ANY($1::bigint[])`, [holds.map((b) => b.id)]);
  return holds;
}
/** What a payment check that did not confirm was doing: the row, its jobs in Redis with their logs, the processes' output. */
async function paycheckStory(b: Hold): Promise<string> {
  const row = (await h.sql(`SELECT status, version, job_gen, hold_expires_at, next_expiry_check_at, lease_until, pay_requested_at, now() AS now
    FROM booking WHERE id = $1`, [b.id])).rows[0];
  const jobs: string[] = [];
  for (const key of await redis.client.keys(`${prefix()}:{payment-checks}:paycheck-${b.id}-*`)) {
    if (key.endsWith(':logs')) jobs.push(`${key}: ${(await redis.client.lrange(key, 0, -1)).join(' | ')}`);
    else if ((await redis.client.type(key)) === 'hash') jobs.push(`${key}: ${JSON.stringify(await redis.client.hgetall(key))}`);
  }
  const state = await sandbox(h).state();
  return [JSON.stringify(row), ...jobs, JSON.stringify(state.intents.filter((i) => i.reference === String(b.id))),
    ...children.map((c) => c.output().slice(-3000))].join('\n');
}
/** bull-board's complete again: every open HOLD in its expiry phase is a delayed expiry job, and the schedules exist. */
async function expiryJobsComplete(): Promise<boolean> {
  const { rows } = await h.sql(`SELECT id::int, job_gen FROM booking WHERE status = 'HOLD' AND (pay_requested_at IS NULL OR hold_expires_at > now())`);
  for (const r of rows) if (!(await redis.client.exists(jobKey('expiry', `expire-${r.id}-g${r.job_gen}`)))) return false;
  return (await h.queues.maintenance.getJobSchedulers()).length === 3;
}

describe('Redis loses its data while every kind of work is owed', () => {
  it('FLUSHALL mid-run: each kind\'s work happens once, the hold expires on time, bull-board is complete within 10 s', async () => {
    const plain = await holdCar(h);
    const kept = await longHolds(3);
    // A hold whose customer pays: once due, its payment check finds the provider down and keeps it.
    const paying = await holdCar(h);
    const payingIntent = await requestPay(h, paying);
    // A cancelled hold with an intent: its intents are owed a cancellation.
    const cancelled = await holdCar(h);
    const cancelledIntent = await requestPay(h, cancelled);
    await sandbox(h).setFaults({ apiDown: true });
    gateway.refusing = true;
    expect((await h.req('POST', `/bookings/${cancelled.id}/cancel`, { token: cancelled.token, body: {} })).status).toBe(200);
    // A late payment for another cancelled hold: a refund owed (and notifications of both cancellations).
    const refunded = await holdCar(h);
    expect((await h.req('POST', `/bookings/${refunded.id}/cancel`, { token: refunded.token, body: {} })).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(refunded.id, refunded.deposit))).status).toBe(200);
    const refund = (await h.sql(`SELECT id::int FROM refund WHERE booking_id = $1`, [refunded.id])).rows[0].id as number;
    // Each was tried and refused: their jobs wait out a backoff.
    await waitFor(async () => (await h.sql(`SELECT attempts FROM refund WHERE id = $1`, [refund])).rows[0].attempts >= 1, 15_000);
    await waitFor(async () => (await h.sql(`SELECT attempts FROM intent_cancellation WHERE booking_id = $1`, [cancelled.id])).rows[0]?.attempts >= 1, 15_000);
    await waitFor(async () => gateway.refused >= 2, 15_000);

    // The flush hits what the processes use: they are connected to this Redis, and the owed jobs are in it.
    expect(await redis.processConnections()).toBeGreaterThanOrEqual(14);
    const before = [
      jobKey('expiry', `expire-${plain.id}-g0`), jobKey('expiry', `expire-${kept[0]!.id}-g0`), jobKey('refunds', `refund-${refund}-g0`),
      jobKey('intent-cancellations', `cancel-intents-${cancelled.id}-g${await gen('intent_cancellation', 'booking_id', cancelled.id)}`),
    ];
    for (const k of before) expect(await redis.client.exists(k), k).toBe(1);
    expect((await redis.client.keys(`${prefix()}:{notifications}:notify-*`)).length).toBeGreaterThanOrEqual(4);
    expect(await h.queues.maintenance.getJobSchedulers()).toHaveLength(3);
    // In one transaction: the processes write to this Redis all the time (heartbeats, markers), so a DBSIZE sent
    // after the flush may already count their new keys.
    expect(await redis.client.multi().flushall().dbsize().exec()).toEqual([[null, 'OK'], [null, 0]]);
    const flushedAt = Date.now();

    // bull-board complete again within 10 s: every hold's expiry job, the refund's, the cancellation's, the schedules.
    await waitFor(expiryJobsComplete, 10_000, 100);
    await waitFor(async () => (await redis.client.exists(jobKey('refunds', `refund-${refund}-g${await gen('refund', 'id', refund)}`))) === 1, 10_000, 100);
    await waitFor(async () => (await redis.client.exists(jobKey('intent-cancellations',
      `cancel-intents-${cancelled.id}-g${await gen('intent_cancellation', 'booking_id', cancelled.id)}`))) === 1, 10_000, 100);
    expect(Date.now() - flushedAt).toBeLessThan(10_500);
    expect((await h.queues.expiry.getJobCounts('delayed')).delayed).toBeGreaterThanOrEqual(kept.length);

    // The plain hold expires within 1 s of its deadline, and frees its car.
    await waitExpired(plain);
    expect(await expiredLag(plain)).toBeLessThan(1000);
    // The paying hold is past due and kept: its payment check, armed again, has run and found the provider down.
    // (Its job merely existing is not enough: a check that first asks once the provider is back finds the intent
    // unpaid and rightly expires the hold.)
    const keptByCheck = async () => {
      for (const key of await redis.client.keys(`${prefix()}:{payment-checks}:paycheck-${paying.id}-g*:logs`)) {
        if ((await redis.client.lrange(key, 0, -1)).some((line) => line.includes('kept: provider unreachable'))) return true;
      }
      return false;
    };
    await waitFor(keptByCheck, 15_000, 100).catch(async () => { throw new Error(`no check kept ${paying.id}:\n${await paycheckStory(paying)}`); });
    expect(await statusOf(h, paying.id)).toBe('HOLD');

    // The customer pays while the provider's API is down (its webhook never comes); then the provider and the
    // gateway come back, and everything owed happens, once.
    await sandbox(h).post(`/intents/${payingIntent}/succeed-silently`);
    await sandbox(h).resetFaults();
    gateway.refusing = false;
    // Its next check may be up to the re-check cap (30 s) away, as the provider was down: the cap and some more.
    await waitFor(async () => (await statusOf(h, paying.id)) === 'CONFIRMED', 45_000, 100)
      .catch(async () => { throw new Error(`paying hold ${paying.id} not CONFIRMED:\n${await paycheckStory(paying)}`); });
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE id = $1`, [refund])).rows[0].status === 'SUCCEEDED', 45_000, 200);
    await waitFor(async () => (await sandbox(h).state()).intents.find((i) => i.id === cancelledIntent)?.status === 'canceled', 30_000, 200);
    expect(await sandbox(h).refundsFor(refunded.id)).toHaveLength(1);
    const owed = (await h.sql(`SELECT event_id::text || ':' || channel AS key FROM notification WHERE booking_id = ANY($1::bigint[])`,
      [[plain.id, paying.id, cancelled.id, refunded.id]])).rows.map((r) => r.key as string);
    await waitFor(async () => owed.every((k) => gateway.accepted.some((a) => a.key === k)), 45_000, 200);
    await sleep(1500); // a second delivery would show by now
    for (const k of owed) expect(gateway.accepted.filter((a) => a.key === k), k).toHaveLength(1);
  }, 180_000);

  it('a Redis restart without persistence: the hold still expires on time, its kept holds\' jobs are back within 10 s', async () => {
    const plain = await holdCar(h);
    await longHolds(2);
    await waitFor(expiryJobsComplete, 10_000, 100);
    expect(await redis.processConnections()).toBeGreaterThanOrEqual(14);
    const addedAt = await redis.client.hget(jobKey('expiry', `expire-${plain.id}-g0`), 'timestamp');
    expect(addedAt).not.toBeNull();
    await redis.stop();
    await sleep(1000);
    await redis.start();
    // The restart lost the job: it is gone, or already added again by a reconciler that saw the empty Redis first.
    expect(await redis.client.hget(jobKey('expiry', `expire-${plain.id}-g0`), 'timestamp')).not.toBe(addedAt);
    const restartedAt = Date.now();
    await waitFor(expiryJobsComplete, 10_000, 100);
    expect(Date.now() - restartedAt).toBeLessThan(10_500);
    await waitExpired(plain);
    expect(await expiredLag(plain)).toBeLessThan(1000);
  }, 60_000);

  it('Redis down when a hold is placed: 201 at once, the failed add is counted, and the hold expires on time', async () => {
    await redis.stop();
    const failedBefore = (await jobsEnqueueFailed.get()).values.find((v) => v.labels.queue === 'expiry')?.value ?? 0;
    const started = performance.now();
    const b = await holdCar(h);
    const ms = performance.now() - started;
    expect(ms, 'the hold answered in').toBeLessThan(1000);
    const failedAfter = (await jobsEnqueueFailed.get()).values.find((v) => v.labels.queue === 'expiry')?.value ?? 0;
    expect(failedAfter - failedBefore).toBe(1);
    // Nobody has its job: the expiry reconciler expires it itself (from PostgreSQL), Redis still down.
    await waitExpired(b);
    expect(await expiredLag(b)).toBeLessThan(1000);
    await redis.start();
    // Its booking.expired notifications (their adds failed too) are armed again and sent.
    await waitFor(async () => gateway.accepted.filter((a) => a.bookingId === b.id).length === 2, 30_000, 200);
  }, 60_000);
});
