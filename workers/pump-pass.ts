import type { PreparedDb } from '../shared/db/prepared.js';
import { claimPending, lockLanes, markDone, type Lanes, type PendingRow } from '../shared/db/outbox.js';
import { topicName } from '../shared/events/topics.js';
import { parseEvent, type PublishedEvent } from '../shared/events/payloads.js';
import { addJobs, type Queues } from '../shared/queues/queues.js';
import { jobsForEvent } from '../shared/queues/registry.js';
import { withTimeout } from '../shared/async.js';
import { logger } from '../shared/logger.js';
import { traceparentFor, type Correlation } from '../shared/correlation.js';
import { countByType, pumpDispatched, pumpPublished } from '../shared/metrics/work.js';
import type { KafkaLane } from './kafka.js';

/** Rows per lane per pass. */
export const BATCH = 1000;
// The claimed rows stay locked while a lane delivers them, and later events of their keys wait behind them:
// a sink that hangs must give them back soon, and a dead Redis is noticed before anything is locked.
const REDIS_CHECK_MS = 2_000;
const ENQUEUE_TIMEOUT_MS = 5_000;
const PUBLISH_TIMEOUT_MS = 10_000;

/** Where a pass delivers: Kafka (publish lane) and/or BullMQ (dispatch lane). */
export interface PumpTargets {
  kafka?: KafkaLane | null;
  jobs?: { queues: Queues; alive?: () => Promise<unknown> } | null;
}

export type Lane = keyof Lanes;

export interface PassResult {
  /** Rows delivered by each lane in this pass. */
  published: number;
  dispatched: number;
  /** True when a lane had a full batch: more is waiting. */
  full: boolean;
  /** True when another pump held a lane this pass wanted (it is working: poll at the busy rate). */
  lanesBusy: boolean;
  /** Lanes that failed (their rows stay for a later pass); the others' work is committed. */
  failures: { lane: Lane; error: Error }[];
}

/** The stored event, parsed; null (logged, no jobs) when it does not match its type's schema. */
function eventOf(row: PendingRow): PublishedEvent | null {
  try {
    return parseEvent(row.topic, JSON.parse(row.payload));
  } catch (err) {
    // Never block the outbox on one bad row. Expiry has a database sweep behind its jobs (refunds and
    // notifications are rows written with their events, not jobs); the event still reaches Kafka.
    logger.error({ err: String(err), eventId: row.eventId, topic: row.topic, requestId: row.requestId ?? undefined }, 'outbox event does not match its schema; no jobs');
    return null;
  }
}

/** The request an event was written for (null outside one): its jobs and its Kafka message carry it on. */
const correlationOf = (r: PendingRow): Correlation | undefined =>
  r.requestId ? { requestId: r.requestId, traceparent: r.traceparent ?? traceparentFor(r.requestId) } : undefined;

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
 * The jobs the queue registry asks for, one bulk add per queue, each carrying its event's request id. Job ids
 * come from the events: re-adding is a no-op.
 */
async function dispatch(queues: Queues, rows: readonly PendingRow[]): Promise<void> {
  const now = Date.now();
  const jobs = rows.flatMap((r) => {
    const e = eventOf(r);
    const correlation = correlationOf(r);
    return e ? jobsForEvent(e, now).map((j) => ({ ...j, correlation })) : [];
  });
  if (jobs.length) await withTimeout(addJobs(queues, jobs), ENQUEUE_TIMEOUT_MS, 'enqueue');
}

/**
 * One pass of the outbox pump: takes the lanes it can (one pump per lane at a time), claims the oldest rows
 * each lane needs in one statement, delivers both lanes at once, marks what was delivered in one UPDATE and
 * commits. A crash between delivery and commit delivers the batch again (at least once; job ids make the
 * second dispatch a no-op). Throws when no lane could do its work; a lane failing while the other worked is
 * reported in `failures` (its rows wait for a later pass).
 */
export async function pumpOnce(db: PreparedDb, t: PumpTargets, batch = BATCH): Promise<PassResult> {
  const failures: PassResult['failures'] = [];
  const want: Lanes = { publish: !!t.kafka, dispatch: !!t.jobs };
  const attempted = (want.publish ? 1 : 0) + (want.dispatch ? 1 : 0);
  if (t.jobs?.alive) {
    // A fail-fast ping: with Redis down, nothing is locked on the dispatch lane's behalf.
    try {
      await withTimeout(t.jobs.alive(), REDIS_CHECK_MS, 'redis ping');
    } catch (error) {
      failures.push({ lane: 'dispatch', error: error as Error });
      want.dispatch = false;
    }
  }
  const result: PassResult = { published: 0, dispatched: 0, full: false, lanesBusy: false, failures };
  if (want.publish || want.dispatch) {
    await db.transaction(async (tx) => {
      const lanes = await lockLanes(tx, want);
      result.lanesBusy = lanes.publish !== want.publish || lanes.dispatch !== want.dispatch;
      if (!lanes.publish && !lanes.dispatch) return;
      const rows = await claimPending(tx, lanes, batch);
      const toPublish = lanes.publish ? rows.filter((r) => r.toPublish) : [];
      const toDispatch = lanes.dispatch ? rows.filter((r) => r.toDispatch) : [];
      const [published, dispatched] = await Promise.allSettled([
        lanes.publish ? publish(t.kafka!, toPublish) : Promise.resolve(),
        lanes.dispatch ? dispatch(t.jobs!.queues, toDispatch) : Promise.resolve(),
      ]);
      if (published.status === 'rejected') failures.push({ lane: 'publish', error: published.reason as Error });
      else result.published = toPublish.length;
      if (dispatched.status === 'rejected') failures.push({ lane: 'dispatch', error: dispatched.reason as Error });
      else result.dispatched = toDispatch.length;
      await markDone(tx, published.status === 'fulfilled' ? toPublish.map((r) => r.id) : [], dispatched.status === 'fulfilled' ? toDispatch.map((r) => r.id) : []);
      if (published.status === 'fulfilled') countByType(pumpPublished, toPublish);
      if (dispatched.status === 'fulfilled') countByType(pumpDispatched, toDispatch);
      result.full = toPublish.length >= batch || toDispatch.length >= batch;
    });
  }
  if (failures.length > 0 && failures.length === attempted) throw failures[0]!.error;
  return result;
}
