import net from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../shared/events/topics.js';
import { createKafka, ensureTopics } from '../../workers/kafka.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { count, outboxOf, settledRefunds } from '../helpers/bookings.js';
import { holdCar, hostToken } from '../helpers/cars.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { spawnTs, testSecrets } from '../helpers/processes.js';

// The pump is only the Kafka relay: nothing it does needs Redis. The real pump process runs with REDIS_URL on a
// port where a listener drops every connection at once (Redis unreachable) and counts them: every event must still
// reach Kafka, and the pump must never have tried to open Redis.

const BROKERS = ['127.0.0.1:9092'];
let h: Harness;
let prefix: string;
let consumer: Consumer;
const received = new Set<string>();
let redisAttempts = 0;
let deadRedis: net.Server;
let pump: ReturnType<typeof spawnTs> | undefined;

beforeAll(async () => {
  deadRedis = net.createServer((socket) => {
    redisAttempts++;
    socket.destroy();
  });
  await new Promise<void>((r) => deadRedis.listen(0, '127.0.0.1', r));
  // Refunds and notifications (due loops) run in this process on the shared Redis; only the pump's Redis is dead.
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000' } });
  prefix = `t${randomBytes(5).toString('hex')}.`;
  const kafka = createKafka(BROKERS, 'pump-redis-down-test');
  await ensureTopics(kafka, prefix);
  consumer = kafka.consumer({ groupId: `g-${prefix}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: EVENT_TYPES.map((t) => `${prefix}${t}`), fromBeginning: true });
  const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
  await consumer.run({ eachMessage: async ({ message }) => { received.add(String(message.headers?.['event-id'])); } });
  await joined;
}, 60_000);

afterAll(async () => {
  if (pump && pump.exitCode === null) pump.kill('SIGKILL');
  await consumer?.disconnect();
  await h?.close();
  await new Promise((r) => deadRedis?.close(r));
});

/** Held → paid → cancelled by the host → refund paid: five events of one booking. */
async function lifecycle() {
  const b = await holdCar(h);
  expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
  const c = await h.req('POST', `/bookings/${b.id}/cancel`, { token: hostToken(h), body: { reason: 'test' } });
  expect(c.status, c.text).toBe(200);
  await settledRefunds(h, b.id);
}

describe('the outbox pump with Redis unreachable', () => {
  it('publishes every event to Kafka, never connects to Redis, and stops cleanly', async () => {
    await lifecycle(); // events written before the pump starts
    pump = spawnTs('workers/pump.ts', {
      ...testSecrets(), NODE_ENV: 'test', LOG_LEVEL: 'warn', METRICS_PORT: '0', DATABASE_URL: h.config.DATABASE_URL,
      REDIS_URL: `redis://127.0.0.1:${(deadRedis.address() as net.AddressInfo).port}/0`, QUEUE_PREFIX: 'dead',
      KAFKA_BROKERS: BROKERS.join(','), KAFKA_TOPIC_PREFIX: prefix,
    });
    await lifecycle(); // and while it runs
    await holdCar(h);

    const rows = await outboxOf(h);
    expect(rows.length).toBe(11);
    await waitFor(async () => (await count(h, 'SELECT 1 FROM outbox WHERE published_at IS NULL')) === 0, 30_000)
      .catch((e) => { throw new Error(`${e.message}\n${pump!.output().slice(-3000)}`); });
    await waitFor(async () => rows.every((r) => received.has(r.eventId)), 20_000);
    expect(pump.exitCode, pump.output()).toBeNull();
    expect(redisAttempts, 'connections the pump opened to Redis').toBe(0);

    const exited = new Promise<number | null>((r) => pump!.once('exit', (code) => r(code)));
    pump.kill('SIGTERM');
    expect(await exited, pump.output()).toBe(0);
    expect(redisAttempts).toBe(0);
  });
});
