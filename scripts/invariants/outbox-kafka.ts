import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { topicName } from '../../shared/events/topics.js';
import type { Invariant } from './types.js';

const CONSUME_TIMEOUT_MS = 60_000;

/** A message as readTopicsToEnd hands it over: where it is and its `event-id` header. */
export interface ReadMessage {
  topic: string;
  partition: number;
  offset: bigint;
  eventId: string | undefined;
}

/**
 * Reads every message of `topics` (those that exist) from the beginning with a fresh consumer group (deleted
 * afterwards), up to the high watermarks taken first, handing each to `onMessage`. Throws when a partition could
 * not be read to its end in `timeoutMs`.
 */
export async function readTopicsToEnd(
  kafka: Kafka, topics: readonly string[], timeoutMs: number, onMessage: (m: ReadMessage) => void,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `read-to-end-${randomUUID()}`;
  try {
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((t) => existing.has(t));
    /** partition key → last offset to read (high watermark − 1) */
    const remaining = new Map<string, bigint>();
    for (const t of present) {
      for (const p of await admin.fetchTopicOffsets(t)) {
        if (BigInt(p.high) > BigInt(p.low)) remaining.set(`${t}/${p.partition}`, BigInt(p.high) - 1n);
      }
    }
    if (remaining.size === 0) return;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topics: present, fromBeginning: true });
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ topic, partition, message }) => {
          const id = message.headers?.['event-id'];
          const offset = BigInt(message.offset);
          onMessage({ topic, partition, offset, eventId: id === undefined ? undefined : String(id) });
          const key = `${topic}/${partition}`;
          const last = remaining.get(key);
          if (last !== undefined && offset >= last) remaining.delete(key);
          if (remaining.size === 0) done();
        },
      });
      const timer = setTimeout(done, timeoutMs);
      await finished;
      clearTimeout(timer);
      if (remaining.size > 0) throw new Error(`could not read ${[...remaining.keys()].join(', ')} to the end in ${timeoutMs / 1000} s`);
    } finally {
      await consumer.disconnect();
    }
  } finally {
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}

/** The `event-id` headers of every message of `topics`. */
async function eventIdsIn(brokers: string[], topics: string[]): Promise<Set<string>> {
  const kafka = new Kafka({ clientId: 'check-invariants', brokers, logLevel: logLevel.NOTHING, retry: { retries: 3 } });
  const seen = new Set<string>();
  await readTopicsToEnd(kafka, topics, CONSUME_TIMEOUT_MS, (m) => {
    if (m.eventId !== undefined) seen.add(m.eventId);
  });
  return seen;
}

/** Every outbox row is published, and (when Kafka is configured) its event id is in its topic. */
export const outboxPublished: Invariant = {
  name: 'outbox-published',
  async check({ query, kafka }) {
    const rows = await query<{ eventId: string; topic: string; published: boolean }>(`
      SELECT event_id::text AS "eventId", topic, published_at IS NOT NULL AS published FROM outbox ORDER BY id`);
    const violations = rows.filter((r) => !r.published).map((r) => `event ${r.eventId} (${r.topic}): never published`);
    if (!kafka) return { checked: rows.length, violations, note: 'Kafka not configured: published_at only' };
    const topics = [...new Set(rows.map((r) => topicName(kafka.prefix, r.topic)))];
    try {
      const seen = await eventIdsIn(kafka.brokers, topics);
      for (const r of rows) if (r.published && !seen.has(r.eventId)) violations.push(`event ${r.eventId} (${r.topic}): marked published, not in Kafka`);
    } catch (e) {
      violations.push(`could not read Kafka: ${(e as Error).message}`);
    }
    return { checked: rows.length, violations };
  },
};
