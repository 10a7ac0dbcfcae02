import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { holdCar } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { freePort, spawnTs, testSecrets } from '../helpers/processes.js';

// Issue 8, item 1: Redis loses its data (FLUSHALL) while refunds and notifications wait to be retried. The
// workers run as real child processes on a Redis of their own; everything must still happen, once.

/** The sms/push gateway (NOTIFY_WEBHOOK_URL): refuses while `refusing`, counts deliveries per Idempotency-Key. */
const gateway = {
  refusing: true, refused: 0, accepted: [] as { key: string | undefined; eventType: string; bookingId: number; channel: string }[],
  /** Records the delivery but never answers (the sender is then killed mid-send). */
  hanging: false, hung: [] as import('node:http').ServerResponse[],
};
let env: Record<string, string>;
let gatewayServer: Server;
let redisServer: ChildProcess;
let redis: Redis;
let h: Harness;
const workers: (ChildProcess & { output: () => string })[] = [];

beforeAll(async () => {
  const redisPort = await freePort();
  redisServer = spawn('redis-server', ['--port', String(redisPort), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  redis = new Redis({ port: redisPort, lazyConnect: true });
  redis.on('error', () => {});
  // ping, not connect(): after a first refused connect ioredis keeps reconnecting and a second connect() rejects.
  await waitFor(async () => (await redis.ping().catch(() => null)) === 'PONG', 10_000, 100);
  gatewayServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (gateway.refusing) {
        gateway.refused++;
        res.writeHead(503).end();
        return;
      }
      const key = req.headers['idempotency-key'];
      gateway.accepted.push({ ...JSON.parse(Buffer.concat(chunks).toString('utf8')), key: typeof key === 'string' ? key : undefined });
      if (gateway.hanging) gateway.hung.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => gatewayServer.listen(0, '127.0.0.1', r));
  const notifyUrl = `http://127.0.0.1:${(gatewayServer.address() as AddressInfo).port}/notify`;
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '1000' } });
  env = {
    ...testSecrets(), NODE_ENV: 'test', DATABASE_URL: h.config.DATABASE_URL, REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
    QUEUE_PREFIX: 'lossy', PSP_URL: h.config.pspUrl, PSP_API_KEY: h.config.PSP_API_KEY, NOTIFY_WEBHOOK_URL: notifyUrl,
    KAFKA_BROKERS: 'none', METRICS_PORT: '0', LOG_LEVEL: 'warn',
  };
  for (const file of ['workers/refunds.ts', 'workers/notifications.ts']) workers.push(spawnTs(file, env));
}, 60_000);

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await h?.close();
  redis?.disconnect();
  redisServer?.kill('SIGKILL');
  await new Promise((r) => gatewayServer?.close(r));
});

describe('Redis loses its data while refunds and notifications wait', () => {
  it('a refund the provider could not take and notifications the gateway refused all happen, once, after FLUSHALL', async () => {
    // The provider is unreachable at first (the refund's retry waits), then answers 429 for a while, then pays.
    await sandbox(h).setFaults({ apiDown: true });
    await sandbox(h).setRefundFaults({ rejectStatus: 429, rejectCount: 2 });
    // A late payment for a cancelled hold: refund PENDING; booking.cancelled notified. A confirmed one: notified.
    const refunded = await holdCar(h);
    expect((await h.req('POST', `/bookings/${refunded.id}/cancel`, { token: refunded.token, body: {} })).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(refunded.id, refunded.deposit))).status).toBe(200);
    const confirmed = await holdCar(h);
    expect((await signedWebhook(h, paymentSucceeded(confirmed.id, confirmed.deposit))).status).toBe(200);

    // Both were tried and refused: their retries wait (in Redis, before the fix).
    await waitFor(async () => (await h.sql(`SELECT attempts FROM refund WHERE booking_id = $1`, [refunded.id])).rows[0]?.attempts >= 1, 20_000);
    await waitFor(async () => gateway.refused >= 3, 20_000);
    await sleep(500);
    expect(await redis.flushall()).toBe('OK');

    await sandbox(h).setFaults({ apiDown: false });
    gateway.refusing = false;
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [refunded.id])).rows[0]?.status === 'SUCCEEDED', 45_000, 200);
    const expected = [
      `${refunded.id} booking.cancelled/push`, `${refunded.id} booking.cancelled/sms`, `${refunded.id} refund.succeeded/push`,
      `${refunded.id} refund.succeeded/sms`, `${confirmed.id} booking.confirmed/push`, `${confirmed.id} booking.confirmed/sms`,
    ];
    const delivered = () => gateway.accepted.map((n) => `${n.bookingId} ${n.eventType}/${n.channel}`).sort();
    await waitFor(async () => delivered().length >= expected.length, 45_000, 200);
    await sleep(2_000); // anything sent twice would show by now
    expect(delivered()).toEqual(expected.sort());
    expect(await sandbox(h).refundsFor(refunded.id)).toHaveLength(1);
    // Every delivery names its (event, channel): a receiver can drop a resend after a crash mid-send.
    for (const n of gateway.accepted) expect(n.key).toMatch(/^[0-9a-f-]{36}:(sms|push)$/);
    const { rows } = await h.sql(`SELECT count(*)::int AS n FROM notification WHERE sent_at IS NOT NULL AND booking_id = ANY($1)`, [[refunded.id, confirmed.id]]);
    expect(rows[0].n).toBe(expected.length);
  }, 150_000);

  it('notification workers killed mid-send (kill -9): sent again after the lease, with the same key; never by two at once', async () => {
    gateway.refusing = false;
    gateway.hanging = true;
    workers.push(spawnTs('workers/notifications.ts', env)); // a second notifications worker beside the first
    await sleep(1_500);
    const b = await holdCar(h);
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const deliveries = () => gateway.accepted.filter((n) => n.bookingId === b.id);
    await waitFor(async () => deliveries().length >= 2, 10_000, 20);
    for (const w of workers.filter((w) => /notifications/.test(w.spawnargs.join(' ')))) w.kill('SIGKILL');
    const beforeKill = deliveries().map((n) => n.key).sort();
    // Each (event, channel) went out once before the kill: two workers never claimed the same row.
    expect(beforeKill).toHaveLength(2);
    expect(new Set(beforeKill).size).toBe(2);
    gateway.hanging = false;
    for (const res of gateway.hung.splice(0)) res.destroy();

    workers.push(spawnTs('workers/notifications.ts', env));
    // Their claims come due when the lease (30 s) runs out; then sent and marked, once more each, same keys.
    await waitFor(async () => (await h.sql(`SELECT 1 FROM notification WHERE booking_id = $1 AND sent_at IS NOT NULL`, [b.id])).rowCount === 2, 60_000, 250);
    await sleep(1_000);
    expect(deliveries().map((n) => n.key).sort()).toEqual([...beforeKill, ...beforeKill].sort());
  }, 90_000);
});
