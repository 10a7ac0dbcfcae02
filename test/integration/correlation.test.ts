import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, waitFor } from '../helpers/http.js';
import { newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { createKafka, ensureTopics } from '../../workers/kafka.js';
import { startKafkaPump } from '../helpers/kafka.js';

// One request id finds a booking's story: the hold request's X-Request-Id (and its W3C trace) is written with
// booking.held and copied by the outbox pump into the Kafka headers; the hold's expiry job carries them in its data,
// and its worker runs inside them, so booking.expired belongs to the same story.

const BROKERS = ['127.0.0.1:9092'];
const prefix = `corr${randomBytes(4).toString('hex')}.`;
let h: Harness;
let consumer: Consumer;
let relay: { stop(): Promise<void> };
const received: { topic: string; key: string; headers: Record<string, string> }[] = [];

beforeAll(async () => {
  // Holds expire after 2 s (their expiry job).
  h = await startHarness({ workers: true, env: { HOLD_TTL_S: '2' } });
  const kafka = createKafka(BROKERS, 'correlation-test');
  await ensureTopics(kafka, prefix);
  consumer = kafka.consumer({ groupId: `g-${prefix}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: [`${prefix}booking.held`, `${prefix}booking.expired`], fromBeginning: true });
  const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
      received.push({ topic: topic.slice(prefix.length), key: message.key!.toString(), headers });
    },
  });
  await joined;
  relay = startKafkaPump(h.deps.prepared, prefix, BROKERS);
});
afterAll(async () => {
  await relay?.stop();
  await consumer?.disconnect();
  await h?.close();
});

describe('request id and trace context', () => {
  it('reach the outbox row and the Kafka headers', async () => {
    const carId = await newCar(h);
    const requestId = `story-${randomUUID()}`;
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const r = await h.req('POST', '/bookings', {
      token: newCustomer(h).token, body: { carId, from: inHours(30), to: inHours(32) },
      headers: { 'x-request-id': requestId, traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('x-request-id')).toBe(requestId);
    const bookingId = r.json.bookingId as number;

    // The outbox row: the caller's trace, with this service's own parent id.
    const held = (await h.sql(`SELECT request_id, traceparent FROM outbox WHERE topic = 'booking.held' AND message_key = $1`, [String(bookingId)])).rows[0];
    expect(held.request_id).toBe(requestId);
    expect(held.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(held.traceparent).not.toContain(callerSpan);

    // Kafka: both events with event-id and event-type; the hold's with its request-id and traceparent.
    const messages = await waitFor(async () => {
      const mine = received.filter((m) => m.key === String(bookingId));
      return mine.length >= 2 ? mine : null;
    }, 20_000);
    expect(messages.map((m) => m.topic).sort()).toEqual(['booking.expired', 'booking.held']);
    for (const m of messages) {
      expect(m.headers['request-id'], m.topic).toBe(requestId);
      expect(m.headers.traceparent, m.topic).toMatch(new RegExp(`^00-${traceId}-`));
      expect(m.headers['event-id'], m.topic).toBeTruthy();
      expect(m.headers['event-type'], m.topic).toBe(m.topic);
    }
  });

  it('derive the trace from the request id when the caller sends no traceparent, and mint both when it sends neither', async () => {
    const carId = await newCar(h);
    const hold = (hours: number, headers: Record<string, string>) =>
      h.req('POST', '/bookings', { token: newCustomer(h).token, headers, body: { carId, from: inHours(hours), to: inHours(hours + 1) } });
    const rowOf = async (bookingId: number) => (await h.sql(
      `SELECT request_id, traceparent FROM outbox WHERE topic = 'booking.held' AND message_key = $1`, [String(bookingId)])).rows[0];

    const named = await hold(40, { 'x-request-id': 'checkout 42/a' });
    const sha = createHash('sha256').update('checkout 42/a').digest('hex').slice(0, 32);
    expect(await rowOf(named.json.bookingId)).toEqual({ request_id: 'checkout 42/a', traceparent: expect.stringMatching(new RegExp(`^00-${sha}-[0-9a-f]{16}-01$`)) });

    const bare = await hold(50, {});
    const minted = bare.headers.get('x-request-id')!;
    expect(await rowOf(bare.json.bookingId)).toEqual({ request_id: minted, traceparent: expect.stringMatching(new RegExp(`^00-${minted.replace(/-/g, '')}-`)) });
  });
});
