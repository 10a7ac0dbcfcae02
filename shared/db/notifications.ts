import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { NOTIFY_CHANNELS, type Channel, type Delivery } from '../domain/notifications.js';
import { claimLease, leaseState, LEASED, releaseLease } from './leases.js';

// notification(event_id, channel): one row per (event, channel), written with its event (same transaction) and
// unsettled (sent_at NULL); its job sends it and settles it (sent_at, delivery). The primary key makes a second
// row for the same (event, channel) impossible.

/**
 * The notifications of a notified event, one per channel, to the booking's customer: in the event's transaction,
 * so they exist exactly when the event does. A repeat inserts nothing. Returns the channels written (and their gen).
 */
export async function insertNotifications(
  tx: CommonQueryMethods,
  n: { eventId: string; eventType: string; bookingId: number; body: string },
): Promise<readonly { channel: Channel; gen: number }[]> {
  return tx.any(sql.type(z.object({ channel: z.enum(NOTIFY_CHANNELS), gen: z.number() }))`
    INSERT INTO notification (event_id, channel, booking_id, event_type, recipient, body, sent_at)
    SELECT ${n.eventId}::uuid, channel, b.id, ${n.eventType}, b.customer_id, ${n.body}, NULL
    FROM booking b, unnest(${sql.array([...NOTIFY_CHANNELS], 'text')}) AS channel
    WHERE b.id = ${n.bookingId}
    ON CONFLICT DO NOTHING
    RETURNING channel, job_gen AS gen`);
}

export const notificationRow = z.object({
  eventId: z.string(),
  channel: z.enum(NOTIFY_CHANNELS),
  bookingId: z.number(),
  eventType: z.string(),
  recipient: z.number(),
  body: z.string(),
});
export type ClaimedNotification = z.infer<typeof notificationRow> & { attempts: number; leaseToken: string };

/** Claims the notification for its job (shared/db/leases.ts): null when not claimable now (see notificationLeaseState). */
export async function claimNotification(
  db: CommonQueryMethods, key: { eventId: string; channel: Channel }, gen: number, leaseMs: number,
): Promise<ClaimedNotification | null> {
  const lease = await claimLease(db, LEASED.notification, [key.eventId, key.channel], gen, leaseMs);
  if (!lease) return null;
  const row = await db.maybeOne(sql.type(notificationRow)`
    SELECT event_id::text AS "eventId", channel, booking_id AS "bookingId", event_type AS "eventType", recipient, body
    FROM notification WHERE event_id = ${key.eventId}::uuid AND channel = ${key.channel}`);
  return row && { ...row, attempts: lease.attempts, leaseToken: lease.token };
}

export const notificationLeaseState = (db: CommonQueryMethods, key: { eventId: string; channel: Channel }) =>
  leaseState(db, LEASED.notification, [key.eventId, key.channel]);

/** Settled, once, by the claim's holder: sent (webhook), written to the log, or skipped (NOTIFY_WEBHOOK_URL=none). */
export async function settleNotification(db: CommonQueryMethods, c: ClaimedNotification, delivery: Delivery): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE notification SET sent_at = now(), delivery = ${delivery}, lease_until = NULL, lease_token = NULL, last_error = NULL
    WHERE event_id = ${c.eventId}::uuid AND channel = ${c.channel} AND lease_token = ${c.leaseToken}::uuid AND sent_at IS NULL`);
  return r.rowCount === 1;
}

/** The send failed: due again `retryInMs` from now. */
export async function releaseNotification(db: CommonQueryMethods, c: ClaimedNotification, error: string, retryInMs: number): Promise<boolean> {
  return releaseLease(db, LEASED.notification, [c.eventId, c.channel], c.leaseToken, { retryInMs, error });
}

const unsentRow = z.object({ unsent: z.number(), oldestAgeSeconds: z.number() });

/** Notifications not sent yet: how many, and the oldest one's age (0 when none); reads the partial due index. */
export async function unsentNotificationStats(db: CommonQueryMethods) {
  return db.one(sql.type(unsentRow)`
    SELECT count(*)::int AS unsent,
           coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS "oldestAgeSeconds"
    FROM notification WHERE sent_at IS NULL`);
}
