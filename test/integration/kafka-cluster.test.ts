import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Admin, Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { mapLimit, sleep, waitFor } from '../helpers/http.js';
import { holdCar, hostToken } from '../helpers/cars.js';
import { outboxOf, type OutboxEntry } from '../helpers/bookings.js';
import { startKafkaPump } from '../helpers/kafka.js';
import { kafkaCluster } from '../helpers/kafka-cluster.js';
import { EVENT_TYPES } from '../../shared/events/topics.js';
import { createKafka, ensureTopics } from '../../workers/kafka.js';

// The pump on a 3-broker KRaft cluster (scripts/kafka-cluster.sh): its topics get 3 replicas and
// min.insync.replicas=2, its idempotent acks=all producer goes on through the crash of the broker that leads the
// busiest partition and its return, and every event arrives, in order per booking.

// Ports of its own (brokers P..P+2, controllers P+100..P+102), apart from the single broker's 9092 and the topology's.
// Three JVMs and a broker kill: ~100 s on a quiet machine, past its 90 s wait at a load of 20+. Run with
// TOPOLOGY_TESTS=1 (docs/testing.md); `npm test` skips it, visibly.
const RUN = process.env.TOPOLOGY_TESTS === '1';
const BASE = 41_000 + Math.floor(Math.random() * 80) * 10;
let dir: string;
let cluster: ReturnType<typeof kafkaCluster>;
let h: Harness;
let admin: Admin;
let consumer: Consumer;
const prefix = `kc${randomBytes(4).toString('hex')}.`;
const received = new Map<string, { topic: string; partition: number; offset: number; key: string }>();

beforeAll(async () => {
  if (!RUN) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafka-cluster-'));
  cluster = kafkaCluster(dir, BASE);
  await cluster.start();
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '100000' } });
  const kafka = createKafka(cluster.brokers, 'kafka-cluster-test');
  admin = kafka.admin();
  await admin.connect();
  await ensureTopics(kafka, prefix);
  // A fresh cluster may not yet serve a just-created topic (or the offsets topic) on every broker: subscribe again.
  for (let attempt = 1; ; attempt++) {
    consumer = kafka.consumer({ groupId: `g-${prefix}${attempt}`, maxWaitTimeInMs: 100 });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: EVENT_TYPES.map((t) => `${prefix}${t}`), fromBeginning: true });
      const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
      await consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          const id = String(message.headers?.['event-id']);
          if (!received.has(id)) received.set(id, { topic, partition, offset: Number(message.offset), key: message.key!.toString() });
        },
      });
      await joined;
      break;
    } catch (e) {
      await consumer.disconnect().catch(() => {});
      if (attempt >= 5) throw e;
      await sleep(2000);
    }
  }
}, 170_000);
afterAll(async () => {
  if (!RUN) return;
  try {
    await consumer?.disconnect();
    await admin?.disconnect();
    await h?.close();
  } finally {
    await cluster?.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe.skipIf(!RUN)('the pump on a 3-broker Kafka cluster', () => {
  it('creates its topics with 3 replicas and min.insync.replicas=2', async () => {
    const topics = EVENT_TYPES.map((t) => `${prefix}${t}`);
    const meta = await admin.fetchTopicMetadata({ topics });
    for (const t of meta.topics) for (const p of t.partitions) expect(p.replicas, t.name).toHaveLength(3);
    const configs = await admin.describeConfigs({
      includeSynonyms: false, resources: topics.map((name) => ({ type: 2, name, configNames: ['min.insync.replicas'] })),
    });
    for (const r of configs.resources) expect(r.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue, r.resourceName).toBe('2');
  });

  it('loses nothing and keeps each booking in order while the leading broker is killed and comes back', async () => {
    const pump = startKafkaPump(h.deps.prepared, prefix, cluster.brokers);
    try {
      // Holds, each cancelled by the host: booking.held then booking.cancelled (and refund.requested when paid: none).
      const traffic = async (n: number) => mapLimit(n, 4, async () => {
        const b = await holdCar(h);
        const c = await h.req('POST', `/bookings/${b.id}/cancel`, { token: hostToken(h), body: { reason: 'test' } });
        expect(c.status, c.text).toBe(200);
      });
      await traffic(10);
      const heldTopic = `${prefix}booking.held`;
      const leader = (await admin.fetchTopicMetadata({ topics: [heldTopic] })).topics[0]!.partitions[0]!.leader;
      const during = traffic(20);
      await sleep(300);
      await cluster.kill(leader);
      await during;
      await traffic(10);
      await cluster.startNode(leader);
      await traffic(10);

      const rows = await waitFor(async () => {
        const all = await outboxOf(h);
        return all.every((r) => received.has(r.eventId)) ? all : null;
      }, 90_000, 250);
      expect(rows.length).toBe(100);
      expectInOrderPerBooking(rows);
    } finally {
      await pump.stop();
    }
  }, 170_000);
});

/**
 * Per booking: within a topic, Kafka offsets follow outbox id order (one key, one partition); across topics,
 * no event of a booking went out in a later batch than a newer one (published_at, as in pump-kafka.test.ts).
 */
function expectInOrderPerBooking(rows: OutboxEntry[]) {
  const byKey = new Map<string, OutboxEntry[]>();
  for (const r of rows) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
  for (const [key, events] of byKey) {
    for (let i = 1; i < events.length; i++) {
      const [a, b] = [events[i - 1]!, events[i]!];
      expect(b.publishedAt!.getTime(), `booking ${key}: ${a.topic} published after ${b.topic}`).toBeGreaterThanOrEqual(a.publishedAt!.getTime());
      const [ka, kb] = [received.get(a.eventId)!, received.get(b.eventId)!];
      if (ka.topic === kb.topic) expect(kb.offset, `booking ${key}: offsets of ${a.topic}`).toBeGreaterThan(ka.offset);
    }
  }
}
