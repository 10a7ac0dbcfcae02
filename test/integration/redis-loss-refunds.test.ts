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
const gateway = { refusing: true, refused: 0, accepted: [] as { key: string | undefined; eventType: string; bookingId: number; channel: string }[] };
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
  await waitFor(() => redis.connect().then(() => true, () => false), 10_000, 100);
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
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => gatewayServer.listen(0, '127.0.0.1', r));
  const notifyUrl = `http://127.0.0.1:${(gatewayServer.address() as AddressInfo).port}/notify`;
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '1000' } });
  const env = {
    ...testSecrets(), NODE_ENV: 'test', DATABASE_URL: h.config.DATABASE_URL, REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
    QUEUE_PREFIX: 'lossy', PSP_URL: h.config.pspUrl, PSP_API_KEY: h.config.PSP_API_KEY, NOTIFY_WEBHOOK_URL: notifyUrl,
    KAFKA_BROKERS: 'none', METRICS_PORT: '0', LOG_LEVEL: 'warn',
  };
  for (const file of ['workers/pump.ts', 'workers/refunds.ts', 'workers/notifications.ts']) workers.push(spawnTs(file, env));
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
});
