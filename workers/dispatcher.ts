import type { Queue } from 'bullmq';
import type { DatabasePool } from '../shared/db/pool.js';
import { claimUndispatched, markDispatched, type OutboxRow } from '../shared/db/outbox.js';
import { NOTIFIED_EVENTS, NOTIFY_CHANNELS, type EventType } from '../shared/events/topics.js';
import { parseConfig } from '../shared/config.js';
import { createDb } from '../shared/db/pool.js';
import { onShutdown } from '../shared/runtime.js';
import { logger } from '../shared/logger.js';
import { EXPIRY_QUEUE, expiryWorker, scheduleExpiry } from './expiry.js';
import { REFUNDS_QUEUE, refundJobId, refundsWorker } from './refunds.js';
import { NOTIFICATIONS_QUEUE, notificationJobId, notificationsWorker } from './notifications.js';
import { isEntry, openQueues, type Queues } from './runner.js';
import { drainOnNotify } from './wake.js';

const BATCH = 500;

/** The jobs an event asks for. Job ids are derived from the event, so dispatching twice adds nothing. */
async function enqueue(queues: Queues, row: OutboxRow): Promise<void> {
  const type = row.topic as EventType;
  const p = row.payload as { bookingId?: number; holdExpiresAt?: string; refundId?: number };
  const adds: Promise<unknown>[] = [];
  if (type === 'booking.held') adds.push(scheduleExpiry(queues[EXPIRY_QUEUE]!, p.bookingId!, new Date(p.holdExpiresAt!)));
  if (type === 'refund.requested') adds.push(queues[REFUNDS_QUEUE]!.add('refund', { refundId: p.refundId! }, { jobId: refundJobId(p.refundId!) }));
  if (NOTIFIED_EVENTS.includes(type)) {
    for (const channel of NOTIFY_CHANNELS) {
      adds.push((queues[NOTIFICATIONS_QUEUE] as Queue).add(
        'notify', { eventId: row.eventId, eventType: type, bookingId: p.bookingId!, channel },
        { jobId: notificationJobId(row.eventId, channel) },
      ));
    }
  }
  await Promise.all(adds);
}

/**
 * Turns a batch of committed events into jobs, then marks them. A crash in between re-dispatches
 * the batch, which the deterministic job ids make harmless. Returns true when more may be waiting.
 */
export async function dispatchBatch(db: DatabasePool, queues: Queues): Promise<boolean> {
  return db.transaction(async (tx) => {
    const rows = await claimUndispatched(tx, BATCH);
    if (rows.length === 0) return false;
    await Promise.all(rows.map((r) => enqueue(queues, r)));
    await markDispatched(tx, rows.map((r) => r.id));
    return rows.length === BATCH;
  });
}

export const dispatcherQueues = [expiryWorker, refundsWorker, notificationsWorker({ send: async () => {} })];

export function startDispatcher(db: DatabasePool, databaseUrl: string, queues: Queues) {
  return drainOnNotify(databaseUrl, 'outbox', () => dispatchBatch(db, queues));
}

if (isEntry(import.meta.url)) {
  const config = parseConfig();
  const db = await createDb(config.DATABASE_URL, { maximumPoolSize: 4 });
  const queues = openQueues(config, dispatcherQueues);
  const dispatcher = startDispatcher(db, config.DATABASE_URL, queues);
  logger.info('dispatcher started');
  onShutdown(async () => {
    await dispatcher.stop();
    await Promise.all(Object.values(queues).map((q) => q.close()));
    await db.end();
  });
}
