// Kafka order per booking and events lost, against the outbox: every outbox row's event is read back from its
// topic (fresh consumer group, from the beginning, up to the high watermarks taken first), and for each booking
// (message key) its events of one topic have increasing offsets in outbox order, and no event of a booking was
// published in an earlier batch than an older one (published_at). Used by the topology test and bench:topology.
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { topicName } from '../../shared/events/topics.js';
import { readTopicsToEnd } from '../invariants/outbox-kafka.js';

export interface KafkaOrderResult {
  events: number;
  bookings: number;
  lost: string[];
  outOfOrder: string[];
}

export async function verifyKafkaOrder(databaseUrl: string, brokers: string[], prefix = '', timeoutMs = 120_000): Promise<KafkaOrderResult> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let rows: { id: number; eventId: string; topic: string; key: string; publishedAt: Date | null }[];
  try {
    rows = (await client.query(`SELECT id::int, event_id::text AS "eventId", topic, message_key AS key, published_at AS "publishedAt" FROM outbox ORDER BY id`)).rows;
  } finally {
    await client.end();
  }
  const kafka = new Kafka({ clientId: 'kafka-order', brokers, logLevel: logLevel.NOTHING, retry: { retries: 5 } });
  const seen = new Map<string, { topic: string; offset: bigint }>();
  const topics = [...new Set(rows.map((r) => topicName(prefix, r.topic)))];
  await readTopicsToEnd(kafka, topics, timeoutMs, ({ topic, offset, eventId }) => {
    if (eventId !== undefined && !seen.has(eventId)) seen.set(eventId, { topic, offset });
  });
  const lost = rows.filter((r) => !seen.has(r.eventId)).map((r) => `event ${r.eventId} (${r.topic}, booking ${r.key}): ${r.publishedAt ? 'published, not in Kafka' : 'never published'}`);
  const byKey = new Map<string, typeof rows>();
  for (const r of rows) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
  const outOfOrder: string[] = [];
  for (const [key, events] of byKey) {
    for (let i = 1; i < events.length; i++) {
      const [a, b] = [events[i - 1]!, events[i]!];
      if (a.publishedAt && b.publishedAt && b.publishedAt.getTime() < a.publishedAt.getTime()) outOfOrder.push(`booking ${key}: ${b.topic} published before ${a.topic}`);
      const [ka, kb] = [seen.get(a.eventId), seen.get(b.eventId)];
      if (ka && kb && ka.topic === kb.topic && kb.offset <= ka.offset) outOfOrder.push(`booking ${key}: ${b.topic} offset ${kb.offset} not after ${ka.offset}`);
    }
  }
  return { events: rows.length, bookings: byKey.size, lost, outOfOrder };
}
