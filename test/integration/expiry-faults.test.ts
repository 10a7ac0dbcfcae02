import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { freePort, spawnTs } from '../helpers/processes.js';
import { outboxOf, statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { sandbox } from '../helpers/sandbox.js';

// Issue 8, items 1 and 6: the expiry process is a real child process (its Procfile entry, workers/expiry.ts) with a
// Redis of its own, so the faults hit only it: its Redis loses everything (FLUSHALL), or it is SIGKILLed twice in
// the middle of a hold's check. Either way the hold still expires and frees its car.

const HOLD_TTL_S = 3;
const LEASE_S = 2;

let h: Harness;
let redisServer: ChildProcess;
let redis: Redis;
let redisUrl: string;
const workers: (ChildProcess & { output: () => string })[] = [];

beforeAll(async () => {
  const port = await freePort();
  redisServer = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  redisUrl = `redis://127.0.0.1:${port}/0`;
  redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  await waitFor(async () => (await redis.ping().catch(() => null)) === 'PONG', 10_000, 100);
  // No workers in the harness: the child below is the only expiry process.
  h = await startHarness({ env: { HOLD_TTL_S: String(HOLD_TTL_S), HOLD_RATE_LIMIT: '1000' } });
}, 60_000);
afterEach(async () => {
  for (const w of workers.splice(0)) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await sandbox(h).resetFaults();
});
afterAll(async () => {
  await h?.close();
  redis?.disconnect();
  redisServer?.kill('SIGKILL');
});

/** Starts the expiry process as `npm start` would (its Procfile entry), on the private Redis; resolves once it runs. */
async function startExpiryProcess() {
  const child = spawnTs('workers/expiry.ts', {
    NODE_ENV: 'test', LOG_LEVEL: 'info', PROC_NAME: 'expiry', METRICS_PORT: '0',
    DATABASE_URL: h.config.DATABASE_URL, REDIS_URL: redisUrl, QUEUE_PREFIX: h.config.QUEUE_PREFIX,
    PSP_URL: h.config.pspUrl, PSP_API_KEY: h.config.PSP_API_KEY, JWT_SECRET: h.config.JWT_SECRET,
    PAYMENT_WEBHOOK_SECRET: h.config.PAYMENT_WEBHOOK_SECRET, DASHBOARD_PASSWORD: 'test-dashboard-password',
    HOLD_TTL_S: String(HOLD_TTL_S), EXPIRY_LEASE_S: String(LEASE_S),
  });
  workers.push(child);
  await waitFor(async () => child.output().includes('"msg":"started"'), 30_000, 50)
    .catch(() => { throw new Error(`expiry process did not start:\n${child.output().slice(-2000)}`); });
  return child;
}

const expiredAt = async (bookingId: number) => {
  const e = (await outboxOf(h, bookingId)).find((r) => r.topic === 'booking.expired');
  return e ? new Date(e.payload.occurredAt).getTime() : null;
};

/** The car's period is free again: another customer can hold it. */
async function carIsFree(b: { id: number; carId: number }) {
  const view = (await h.req('GET', `/bookings/${b.id}`, { token: h.token(1, 'operator') })).json;
  const r = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId: b.carId, from: view.from, to: view.to } });
  return r.status;
}

describe('expiry under faults (a real expiry process)', () => {
  it('Redis loses all its data (FLUSHALL) while a hold is pending: the hold still expires within ~1 s and frees the car', async () => {
    const worker = await startExpiryProcess();
    const b = await holdCar(h);
    await sleep(300);
    expect(await redis.flushall()).toBe('OK');
    expect(await redis.dbsize()).toBe(0);
    expect(await statusOf(h, b.id)).toBe('HOLD');

    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', (HOLD_TTL_S + 6) * 1000, 50)
      .catch(() => { throw new Error(`hold ${b.id} not expired; expiry process said:\n${worker.output().slice(-2000)}`); });
    const lag = (await expiredAt(b.id))! - b.holdExpiresAt.getTime();
    expect(lag).toBeGreaterThanOrEqual(0);
    expect(lag).toBeLessThan(1500);
    expect(await carIsFree(b)).toBe(201);
  }, 30_000);

  it('the process is SIGKILLed twice in the middle of a hold\'s check: the hold still expires (and its intent is cancelled)', async () => {
    const b = await holdCar(h);
    const intentId = await requestPay(h, b);
    // The provider hangs: a check that asks it stays in flight until the process is killed.
    await sandbox(h).setFaults({ apiDelayMs: 60_000 });

    let worker = await startExpiryProcess();
    await sleep(Math.max(0, b.holdExpiresAt.getTime() + 700 - Date.now()));
    // Mid-check: the process has claimed the due hold (its lease: the next check pushed forward) and waits on the provider.
    const { rows } = await h.sql(`SELECT next_expiry_check_at AS at FROM booking WHERE id = $1`, [b.id]);
    worker.kill('SIGKILL');
    expect(await statusOf(h, b.id)).toBe('HOLD');
    const firstLease: number = rows[0].at.getTime();
    // The dead process's claim comes due at the end of its lease; a new process claims it, hangs too, and is killed.
    worker = await startExpiryProcess();
    await sleep(LEASE_S * 1000 + 1000);
    worker.kill('SIGKILL');
    expect(await statusOf(h, b.id)).toBe('HOLD');
    const secondLease: number = (await h.sql(`SELECT next_expiry_check_at AS at FROM booking WHERE id = $1`, [b.id])).rows[0].at.getTime();

    // The provider answers again; a third process takes over once the second lease is over.
    await sandbox(h).resetFaults();
    worker = await startExpiryProcess();
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', (LEASE_S + 8) * 1000, 50)
      .catch(() => { throw new Error(`hold ${b.id} not expired; expiry process said:\n${worker.output().slice(-2000)}`); });
    // Each killed process had claimed the hold (a lease past the last), and the survivor expired it after the second.
    expect(firstLease).toBeGreaterThan(b.holdExpiresAt.getTime());
    expect(secondLease).toBeGreaterThan(firstLease);
    expect((await expiredAt(b.id))!).toBeGreaterThanOrEqual(secondLease);
    expect(await carIsFree(b)).toBe(201);
    // Its payment intent is cancelled at the provider: the customer can no longer pay it.
    await waitFor(async () => (await sandbox(h).intent(intentId)).status === 'canceled', 10_000, 50);
  }, 60_000);
});
