import type { DatabasePool } from '../shared/db/pool.js';
import { claimUndispatched, markDispatched, type OutboxRow } from '../shared/db/outbox.js';
import { NOTIFY_CHANNELS, isNotified } from '../shared/events/topics.js';
import { parseEvent, type PublishedEvent } from '../shared/events/payloads.js';
import { parseConfig, type Config } from '../shared/config.js';
import { createDb } from '../shared/db/pool.js';
import { requestRedis } from '../shared/runtime.js';
import { isEntry, runProcess } from '../shared/process.js';
import { withTimeout } from '../shared/async.js';
import { logger } from '../shared/logger.js';
import { closeQueues, enqueueNotification, enqueueRefund, openQueues, scheduleExpiry, type Queues } from '../shared/queues/queues.js';
import { drainOnNotify } from './wake.js';
import { traceparentFor, withCorrelation, type Correlation } from '../shared/correlation.js';
import { countByType, dispatcherDispatched } from '../shared/metrics/work.js';

const BATCH = 500;
// The claimed rows stay locked while jobs are added, and the relay waits on them (to keep per-booking
// order): never hold them across a Redis outage.
const REDIS_CHECK_MS = 2_000;
const ENQUEUE_TIMEOUT_MS = 5_000;

/** The stored event, parsed; null (logged, no jobs) when it does not match its type's schema. */
function eventOf(row: OutboxRow): PublishedEvent | null {
  try {
    return parseEvent(row.topic, row.payload);
  } catch (err) {
    // Never block the outbox on one bad row. Expiry and refunds have database sweeps behind their jobs;
    // the event still reaches Kafka through the relay.
    logger.error({ err: String(err), eventId: row.eventId, topic: row.topic }, 'outbox event does not match its schema; no jobs');
    return null;
  }
}

/** The request an event was written for: its jobs carry it on (shared/queues addJob). */
const correlationOf = (r: OutboxRow): Correlation | undefined =>
  r.requestId ? { requestId: r.requestId, traceparent: r.traceparent ?? traceparentFor(r.requestId) } : undefined;

/** The jobs an event asks for. Job ids are derived from the event, so dispatching twice adds nothing. */
async function enqueue(queues: Queues, row: OutboxRow): Promise<void> {
  const e = eventOf(row);
  if (!e) return;
  const adds: Promise<unknown>[] = [];
  if (e.type === 'booking.held') adds.push(scheduleExpiry(queues, e.bookingId, new Date(e.holdExpiresAt)));
  if (e.type === 'refund.requested') adds.push(enqueueRefund(queues, e.refundId, e.eventId));
  if (isNotified(e.type) && e.bookingId !== null) {
    for (const channel of NOTIFY_CHANNELS) {
      adds.push(enqueueNotification(queues, { eventId: e.eventId, eventType: e.type, bookingId: e.bookingId, channel }));
    }
  }
  await Promise.all(adds);
}

/**
 * Turns a batch of committed events into jobs, then marks them. A crash in between re-dispatches
 * the batch, which the deterministic job ids make harmless. Returns true when more may be waiting.
 */
export async function dispatchBatch(db: DatabasePool, queues: Queues, redisAlive?: () => Promise<unknown>): Promise<boolean> {
  if (redisAlive) await withTimeout(redisAlive(), REDIS_CHECK_MS, 'redis ping');
  return db.transaction(async (tx) => {
    const rows = await claimUndispatched(tx, BATCH);
    if (rows.length === 0) return false;
    await withTimeout(Promise.all(rows.map((r) => withCorrelation(correlationOf(r), () => enqueue(queues, r)))), ENQUEUE_TIMEOUT_MS, 'enqueue');
    await markDispatched(tx, rows.map((r) => r.id));
    countByType(dispatcherDispatched, rows);
    return rows.length === BATCH;
  });
}

export function startDispatcher(db: DatabasePool, config: Config, queues: Queues) {
  // A fail-fast connection (no offline queue) tells "Redis is down" at once, before any row is locked.
  const probe = requestRedis(config.REDIS_URL);
  probe.on('error', () => {});
  const loop = drainOnNotify(config.DATABASE_URL, 'outbox', () => dispatchBatch(db, queues, () => probe.ping()));
  return {
    kick: loop.kick,
    async stop() {
      await loop.stop();
      probe.disconnect();
    },
  };
}

if (isEntry(import.meta.url)) {
  await runProcess('dispatcher', async () => {
    const config = parseConfig();
    const db = await createDb(config.DATABASE_URL, { maximumPoolSize: 4 });
    const queues = openQueues(config);
    const dispatcher = startDispatcher(db, config, queues);
    return async () => {
      await dispatcher.stop();
      await closeQueues(queues);
      await db.end();
    };
  });
}
