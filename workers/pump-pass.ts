import type { PreparedDb } from '../shared/db/prepared.js';
import { claimPending, lockPublisher, markPublished, type PendingRow } from '../shared/db/outbox.js';
import { topicName } from '../shared/events/topics.js';
import { withTimeout } from '../shared/async.js';
import { countByType, pumpPublished } from '../shared/metrics/work.js';
import type { KafkaLane } from './kafka.js';

/** Rows per pass. */
export const BATCH = 1000;
// The claimed rows stay locked while Kafka takes them, and later events of their keys wait behind them: a broker
// that hangs must give them back soon.
const PUBLISH_TIMEOUT_MS = 10_000;

export interface PassResult {
  /** Events published (and marked) in this pass. */
  published: number;
  /** True when the pass had a full batch: more is waiting. */
  full: boolean;
  /** True when another pump held the publisher lock this pass (it is working: poll at the busy rate). */
  busy: boolean;
  /** Set when Kafka refused or timed out: nothing was marked, the claimed rows wait for a later pass. */
  failure: Error | null;
}

/** `event-id`, `event-type`, and when the event was written for a request, `request-id` and W3C `traceparent`. */
function headersOf(r: PendingRow): Record<string, string> {
  const headers: Record<string, string> = { 'event-id': r.eventId, 'event-type': r.topic };
  if (r.requestId) headers['request-id'] = r.requestId;
  if (r.traceparent) headers.traceparent = r.traceparent;
  return headers;
}

/** One produce request for the batch, grouped by topic; the stored JSON text is the message value as is. */
async function publish(lane: KafkaLane, rows: readonly PendingRow[]): Promise<void> {
  if (rows.length === 0) return;
  const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
  for (const r of rows) {
    const topic = topicName(lane.prefix, r.topic);
    let messages = byTopic.get(topic);
    if (!messages) byTopic.set(topic, (messages = []));
    messages.push({ key: r.key, value: r.payload, headers: headersOf(r) });
  }
  const topicMessages = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
  await withTimeout(lane.producer.sendBatch({ topicMessages, acks: -1 }), PUBLISH_TIMEOUT_MS, 'publish');
}

/**
 * One pass of the outbox pump: takes the publisher lock (one pump at a time), claims the oldest unpublished rows
 * in one statement, publishes them in one produce request, marks them in one UPDATE and commits. A crash between
 * Kafka's acknowledgement and the commit publishes the batch again (at least once; consumers dedupe by
 * `event-id`). A Kafka failure is reported in `failure` (nothing marked); a database failure throws.
 */
export async function pumpOnce(db: PreparedDb, kafka: KafkaLane, batch = BATCH): Promise<PassResult> {
  const result: PassResult = { published: 0, full: false, busy: false, failure: null };
  let published: PendingRow[] = [];
  await db.transaction(async (tx) => {
    if (!(await lockPublisher(tx))) {
      result.busy = true;
      return;
    }
    const rows = await claimPending(tx, batch);
    try {
      await publish(kafka, rows);
    } catch (error) {
      result.failure = error as Error;
      return; // the commit only releases the rows
    }
    await markPublished(tx, rows.map((r) => r.id));
    published = rows;
  });
  // Counted once committed: a pass whose marking failed publishes its batch again and counts it then.
  countByType(pumpPublished, published);
  result.published = published.length;
  result.full = published.length >= batch;
  return result;
}
