import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Consumer, Kafka, Producer } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { mapLimit, sleep, waitFor } from '../helpers/http.js';
import { createPreparedDb } from '../../shared/db/prepared.js';
import { EVENT_TYPES } from '../../shared/events/topics.js';
import { createKafka, ensureTopics } from '../../workers/kafka.js';
import { pumpOnce } from '../../workers/pump-pass.js';
import { startKafkaPump } from '../helpers/kafka.js';
import { count, getBooking, outboxOf, settledRefunds, type OutboxEntry } from '../helpers/bookings.js';
import { holdCar, hostToken, type Hold } from '../helpers/cars.js';
import { stayApi } from '../helpers/stays.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

const BROKERS = ['127.0.0.1:9092'];

interface Received {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string;
  headers: Record<string, string>;
  value: Record<string, any>;
}

type Row = OutboxEntry;

let h: Harness;
let prefix: string;
let received: Received[];
let consumer: Consumer;
const cleanups: (() => Promise<unknown>)[] = [];

/** Subscribes (from the beginning) to every topic under `prefix`, collecting what arrives. */
async function consume(kafka: Kafka): Promise<Consumer> {
  await ensureTopics(kafka, prefix);
  const c = kafka.consumer({ groupId: `g-${prefix}`, maxWaitTimeInMs: 100 });
  await c.connect();
  await c.subscribe({ topics: EVENT_TYPES.map((t) => `${prefix}${t}`), fromBeginning: true });
  const joined = new Promise((resolve) => c.on(c.events.GROUP_JOIN, resolve));
  await c.run({
    eachMessage: async ({ topic, partition, message }) => {
      const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
      received.push({
        topic, partition, offset: Number(message.offset), timestamp: Number(message.timestamp),
        key: message.key!.toString(), headers, value: JSON.parse(message.value!.toString()),
      });
    },
  });
  await joined;
  return c;
}

beforeEach(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000' } });
  prefix = `t${randomBytes(5).toString('hex')}.`;
  received = [];
  consumer = await consume(createKafka(BROKERS, 'relay-test'));
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  await consumer?.disconnect();
  await h?.close();
});

/** The outbox pump (startPump), in this process. */
async function relay(brokers = BROKERS, db = h.deps.prepared) {
  const r = startKafkaPump(db, prefix, brokers);
  cleanups.push(() => r.stop());
  return r;
}
const relayOnce = (db: typeof h.deps.prepared, producer: Producer, topicPrefix: string) => pumpOnce(db, { producer, prefix: topicPrefix });

async function connectedProducer(): Promise<Producer> {
  const producer = createKafka(BROKERS, 'relay-test-producer').producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  cleanups.push(() => producer.disconnect());
  return producer;
}

const outbox = () => outboxOf(h);
const unpublished = () => count(h, `SELECT 1 FROM outbox WHERE published_at IS NULL`);
const waitAllPublished = (timeoutMs = 20_000) => waitFor(async () => (await unpublished()) === 0, timeoutMs);
/** Waits until every outbox event was received at least once; returns the outbox. */
async function waitAllReceived(timeoutMs = 20_000): Promise<Row[]> {
  return waitFor(async () => {
    const rows = await outbox();
    const got = new Set(received.map((m) => m.headers['event-id']));
    return rows.length > 0 && rows.every((r) => got.has(r.eventId)) ? rows : null;
  }, timeoutMs);
}
const firstCopy = (eventId: string) => received.find((m) => m.headers['event-id'] === eventId)!;

/** Held → paid (confirmed) → cancelled by the host (refund.requested) → refund paid (refund.succeeded). */
async function lifecycle(): Promise<Hold> {
  const b = await holdCar(h);
  expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
  const c = await h.req('POST', `/bookings/${b.id}/cancel`, { token: hostToken(h), body: { reason: 'test' } });
  expect(c.status, c.text).toBe(200);
  await settledRefunds(h, b.id);
  return b;
}
const LIFECYCLE = ['booking.held', 'booking.confirmed', 'booking.cancelled', 'refund.requested', 'refund.succeeded'];

async function roomType(): Promise<number> {
  const api = stayApi(h);
  return (await api.roomType((await api.hotel({ city: 'HN' })).id, 300_000)).id;
}
/** Sets sellable on two nights: one inventory.adjusted event. */
async function adjust(roomTypeId: number, sellable: number) {
  await stayApi(h).setInventory(roomTypeId, '2031-01-01', '2031-01-03', sellable);
}

/**
 * Ordered per entity (booking; room type for inventory.adjusted). Only for events whose writes were
 * serialised (each caused by the previous one, or under the same row lock), so that outbox id order is
 * the order in which they happened:
 *  - within one topic (so one partition, which the key decides) Kafka offsets follow id order: exact;
 *  - across topics Kafka has no order, and the messages of one produce request carry per-partition
 *    timestamps; what the relay controls is that no event goes out in a later batch than a newer one of
 *    its key. A batch is marked with one time, and the next batch only after the previous one committed, so
 *    published_at never goes back.
 */
function expectOrderedPerKey(rows: Row[]) {
  const byKey = new Map<string, Row[]>();
  for (const r of rows) {
    const key = `${r.topic === 'inventory.adjusted' ? 'roomType' : 'booking'} ${r.key}`;
    byKey.set(key, [...(byKey.get(key) ?? []), r]);
  }
  for (const [key, events] of byKey) {
    for (let i = 1; i < events.length; i++) {
      const [a, b] = [events[i - 1]!, events[i]!];
      expect(b.publishedAt!.getTime(), `${key}: ${a.topic}#${a.id} published after ${b.topic}#${b.id}`)
        .toBeGreaterThanOrEqual(a.publishedAt!.getTime());
    }
    const msgs = events.map((e) => firstCopy(e.eventId));
    for (const topic of new Set(events.map((e) => e.topic))) {
      const same = msgs.filter((m) => m.topic === `${prefix}${topic}`);
      expect(new Set(same.map((m) => m.partition)).size, `${key} ${topic}: one partition`).toBe(1);
      expect(same.map((m) => m.offset), `${key} ${topic}: offsets in outbox order`).toEqual([...same.map((m) => m.offset)].sort((x, y) => x - y));
    }
  }
}

describe('outbox relay to Kafka', () => {
  it('publishes every event with key, headers and value, in order per booking', async () => {
    await relay();
    const bookings = [await lifecycle(), await lifecycle()];
    const rt = await roomType();
    await adjust(rt, 5);
    await adjust(rt, 7);
    await waitAllPublished();
    const rows = await waitAllReceived();
    expect(rows).toHaveLength(2 * LIFECYCLE.length + 2);

    for (const r of rows) {
      const m = firstCopy(r.eventId);
      expect(m.topic).toBe(`${prefix}${r.topic}`);
      expect(m.headers).toMatchObject({ 'event-id': r.eventId, 'event-type': r.topic });
      expect(m.value).toEqual(r.payload);
      expect(m.value).toMatchObject({ eventId: r.eventId, type: r.topic });
      expect(new Date(m.value.occurredAt).toISOString()).toBe(m.value.occurredAt);
      if (r.topic === 'inventory.adjusted') {
        expect(m.key).toBe(String(rt));
        expect(m.value.roomTypeId).toBe(rt);
      } else {
        expect(m.key).toBe(String(m.value.bookingId));
      }
    }
    for (const b of bookings) {
      const mine = rows.filter((r) => r.key === String(b.id) && r.topic !== 'inventory.adjusted');
      expect(mine.map((r) => r.topic)).toEqual(LIFECYCLE);
      const requested = firstCopy(mine[3]!.eventId).value;
      expect(requested).toMatchObject({ bookingId: b.id, amount: b.deposit, currency: 'VND' });
    }
    expectOrderedPerKey(rows);
    expect((await getBooking(h, bookings[0]!.id)).status).toBe('CANCELLED');
  });

  it('killed between publish and mark: the batch is published again, every event reaches Kafka at least once', async () => {
    await lifecycle();
    await lifecycle();
    const all = await outbox();
    expect(all).toHaveLength(2 * LIFECYCLE.length);
    expect(all.every((r) => r.publishedAt === null)).toBe(true);

    // A relay pass whose process dies right after Kafka acknowledged the batch: the marking
    // transaction never commits.
    const producer = await connectedProducer();
    let inFlight = 0;
    let sent = 0;
    const dying = {
      async sendBatch(batch: Parameters<Producer['sendBatch']>[0]) {
        inFlight++;
        try {
          await producer.sendBatch(batch);
          sent++;
        } finally {
          inFlight--;
        }
        throw new Error('relay killed after publishing, before marking');
      },
    } as unknown as Producer;
    expect((await relayOnce(h.deps.prepared, dying, prefix)).failure?.message).toMatch(/killed/);
    await waitFor(async () => inFlight === 0);
    expect(sent).toBeGreaterThan(0);
    // Kafka has them all; the outbox marked none.
    await waitAllReceived();
    expect(await unpublished()).toBe(all.length);

    await relay();
    await waitAllPublished();
    await waitFor(async () => all.every((r) => received.filter((m) => m.headers['event-id'] === r.eventId).length >= 2));
    const ids = new Set(received.map((m) => m.headers['event-id']));
    for (const r of all) expect(ids.has(r.eventId), r.topic).toBe(true);
  });

  it('with Kafka unreachable nothing is marked published; the events wait and go out once it is back', async () => {
    await relay(['127.0.0.1:1']); // stopped last, in afterEach: stopping waits out its connect retries
    await lifecycle();
    const b = await holdCar(h);
    const n = (await outbox()).length;
    expect(n).toBe(LIFECYCLE.length + 1);
    // Nothing can be observed to "not happen" without waiting: give the relay a few attempts.
    await sleep(2500);
    expect(await unpublished()).toBe(n);
    expect(received).toEqual([]);

    await relay();
    await waitAllPublished();
    const rows = await waitAllReceived();
    expect(rows).toHaveLength(n);
    expect(rows.filter((r) => r.key === String(b.id)).map((r) => r.topic)).toEqual(['booking.held']);
  });

  it('two relays in parallel: every event published, each key in order', async () => {
    const second = createPreparedDb(h.config.DATABASE_URL, 2);
    cleanups.push(() => second.end());
    await relay();
    await relay(BROKERS, second);

    const rt = await roomType();
    const multi = await holdCar(h);
    await Promise.all([
      mapLimit(16, 8, () => lifecycle()),
      (async () => {
        for (let i = 0; i < 25; i++) await adjust(rt, 10 + i);
      })(),
      // Many events of one key on the same topics: refund.requested (and refund.succeeded) × 10.
      (async () => {
        for (let i = 0; i < 10; i++) {
          expect((await signedWebhook(h, paymentSucceeded(multi.id, multi.deposit - 1 - i))).status).toBe(200);
        }
      })(),
    ]);
    await waitFor(async () => (await count(h, `SELECT 1 FROM refund WHERE booking_id = $1 AND status = 'SUCCEEDED'`, [multi.id])) === 10, 20_000);
    await waitAllPublished();
    const rows = await waitAllReceived();
    expect(rows.length).toBe(16 * LIFECYCLE.length + 25 + 1 + 20);
    // The ten refunds of `multi` are settled by concurrent refund jobs that do not lock the booking: their
    // refund.succeeded events are unordered among themselves by nature, so they are left out of the check.
    expectOrderedPerKey(rows.filter((r) => !(r.key === String(multi.id) && r.topic === 'refund.succeeded')));
  });

  it('a pass marks its whole batch with one time (published_at order is the order of passes)', async () => {
    const producer = await connectedProducer();
    await mapLimit(30, 6, () => holdCar(h));
    expect(await unpublished()).toBe(30);
    const pass = await relayOnce(h.deps.prepared, producer, prefix);
    expect(pass.published).toBe(30);
    // Read at PostgreSQL's microsecond precision: a time read per row would differ from row to row.
    const times = await count(h, `SELECT DISTINCT published_at FROM outbox`);
    expect(times).toBe(1);
  });

  it('an event held by another transaction is not overtaken by later events', async () => {
    const producer = await connectedProducer();
    const b = await holdCar(h);
    const [held] = await outbox();
    expect(held!.topic).toBe('booking.held');

    // Another transaction (an older pump's pass still talking to Kafka, an operator's query) holds the row.
    const locker = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM outbox WHERE id = $1 FOR UPDATE', [held!.id]);

    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const pass = relayOnce(h.deps.prepared, producer, prefix);
    await sleep(300);
    await locker.query('COMMIT');
    await pass;
    await relayOnce(h.deps.prepared, producer, prefix);

    const rows = await waitAllReceived();
    expect(rows.map((r) => r.topic)).toEqual(['booking.held', 'booking.confirmed']);
    expectOrderedPerKey(rows);
  });
});
