import { Kafka, logLevel, type Producer } from 'kafkajs';
import type { DatabasePool } from '../shared/db/pool.js';
import { claimUnpublished, lockShard, markPublished, SHARDS } from '../shared/db/outbox.js';
import { EVENT_TYPES, topicName } from '../shared/events/topics.js';
import { parseConfig } from '../shared/config.js';
import { createDb } from '../shared/db/pool.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { drainOnNotify } from './wake.js';

const BATCH = 1000;

export function createKafka(brokers: string[], clientId = 'booking-relay') {
  return new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 200 } });
}

export async function ensureTopics(kafka: Kafka, prefix: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = EVENT_TYPES.map((t) => topicName(prefix, t)).filter((t) => !existing.has(t));
    if (missing.length) await admin.createTopics({ topics: missing.map((topic) => ({ topic, numPartitions: 3 })), waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Publishes one shard's batch inside the transaction that holds its rows, then marks them. A crash
 * between publish and commit republishes the batch: at least once, never lost.
 */
async function publishShard(db: DatabasePool, producer: Producer, prefix: string, shard: number): Promise<number> {
  return db.transaction(async (tx) => {
    if (!(await lockShard(tx, shard))) return 0;
    const rows = await claimUnpublished(tx, shard, BATCH);
    if (rows.length === 0) return 0;
    const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
    for (const r of rows) {
      const topic = topicName(prefix, r.topic);
      if (!byTopic.has(topic)) byTopic.set(topic, []);
      byTopic.get(topic)!.push({ key: r.key, value: JSON.stringify(r.payload), headers: { 'event-id': r.eventId, 'event-type': r.topic } });
    }
    await producer.sendBatch({ topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })), acks: -1 });
    await markPublished(tx, rows.map((r) => r.id));
    return rows.length;
  });
}

/** One pass over every shard; true when some shard had a full batch (more is waiting). */
export async function relayOnce(db: DatabasePool, producer: Producer, prefix: string): Promise<boolean> {
  const counts = await Promise.all(Array.from({ length: SHARDS }, (_, s) => publishShard(db, producer, prefix, s)));
  return counts.some((n) => n === BATCH);
}

export async function startRelay(db: DatabasePool, databaseUrl: string, brokers: string[], prefix: string) {
  const kafka = createKafka(brokers);
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true });
  let connected = false;
  // No broker yet: the relay idles (events wait in the outbox) and retries with backoff, 1 s doubling to 30 s.
  let retryAt = 0;
  let backoffMs = 1000;
  const connect = async (): Promise<boolean> => {
    if (connected) return true;
    if (Date.now() < retryAt) return false;
    try {
      await producer.connect();
      await ensureTopics(kafka, prefix);
      connected = true;
      backoffMs = 1000;
      logger.info({ brokers }, 'relay connected to Kafka');
      return true;
    } catch (err) {
      retryAt = Date.now() + backoffMs;
      logger.warn({ brokers, err: String(err), retryInMs: backoffMs }, 'Kafka unreachable; events wait in the outbox');
      backoffMs = Math.min(backoffMs * 2, 30_000);
      return false;
    }
  };
  producer.on(producer.events.DISCONNECT, () => {
    connected = false;
  });
  const loop = drainOnNotify(databaseUrl, 'outbox', async () => (await connect()) && relayOnce(db, producer, prefix));
  return {
    async stop() {
      await loop.stop();
      await producer.disconnect().catch(() => {});
    },
  };
}

if (isEntry(import.meta.url)) {
  await runProcess('relay', async () => {
    const config = parseConfig();
    const db = await createDb(config.DATABASE_URL, { maximumPoolSize: SHARDS + 2 });
    if (config.kafkaBrokers.length === 0) {
      logger.warn('KAFKA_BROKERS is unset or "none": events wait in the outbox until a relay with brokers runs');
      // Nothing to do, but stay up: the supervisor restarts a process that exits.
      const idle = setInterval(() => {}, 60_000);
      return async () => {
        clearInterval(idle);
        await db.end();
      };
    }
    const relay = await startRelay(db, config.DATABASE_URL, config.kafkaBrokers, config.KAFKA_TOPIC_PREFIX);
    logger.info({ brokers: config.kafkaBrokers }, 'relay publishing');
    return async () => {
      await relay.stop();
      await db.end();
    };
  });
}
