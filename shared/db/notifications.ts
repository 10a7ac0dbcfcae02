import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { NOTIFY_CHANNELS } from '../events/topics.js';

// notification(event_id, channel): one row per (event, channel), written with its event (same transaction) and
// unsent (sent_at NULL); the notifications worker's due loop sends it and marks it sent. The primary key makes a
// second row for the same (event, channel) impossible.

/**
 * The notifications of a notified event, one per channel, to the booking's customer: in the event's transaction,
 * so they exist exactly when the event does. A repeat is a no-op.
 */
export async function insertNotifications(
  tx: CommonQueryMethods,
  n: { eventId: string; eventType: string; bookingId: number; body: string },
): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    INSERT INTO notification (event_id, channel, booking_id, event_type, recipient, body, sent_at)
    SELECT ${n.eventId}::uuid, channel, b.id, ${n.eventType}, b.customer_id, ${n.body}, NULL
    FROM booking b, unnest(${sql.array([...NOTIFY_CHANNELS], 'text')}) AS channel
    WHERE b.id = ${n.bookingId}
    ON CONFLICT DO NOTHING`);
}

export const claimedNotification = z.object({
  eventId: z.string(),
  channel: z.enum(NOTIFY_CHANNELS),
  bookingId: z.number(),
  eventType: z.string(),
  recipient: z.number(),
  body: z.string(),
  attempts: z.number(),
  leaseToken: z.string(),
});
export type ClaimedNotification = z.infer<typeof claimedNotification>;

/**
 * Claims up to `limit` unsent notifications that are due, for `leaseSeconds` (SKIP LOCKED: two workers never claim
 * the same row; a claim never released — the process died mid-send — comes due again when the lease runs out).
 */
export async function claimDueNotifications(db: CommonQueryMethods, limit: number, leaseSeconds: number): Promise<readonly ClaimedNotification[]> {
  return db.any(sql.type(claimedNotification)`
    UPDATE notification n SET attempts = n.attempts + 1, lease_token = gen_random_uuid(),
      lease_until = now() + make_interval(secs => ${leaseSeconds}),
      next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
    FROM (SELECT event_id, channel FROM notification
          WHERE sent_at IS NULL AND next_attempt_at <= now()
          ORDER BY next_attempt_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED) due
    WHERE n.event_id = due.event_id AND n.channel = due.channel
    RETURNING n.event_id::text AS "eventId", n.channel, n.booking_id AS "bookingId", n.event_type AS "eventType",
      n.recipient AS recipient, n.body, n.attempts, n.lease_token::text AS "leaseToken"`);
}

/** The gateway took it: sent, once (only the claim's owner marks it). */
export async function markNotificationSent(db: CommonQueryMethods, c: ClaimedNotification): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE notification SET sent_at = now(), lease_until = NULL, lease_token = NULL, last_error = NULL
    WHERE event_id = ${c.eventId}::uuid AND channel = ${c.channel} AND lease_token = ${c.leaseToken}::uuid AND sent_at IS NULL`);
}

/** The send failed: due again `retryInSeconds` from now. */
export async function releaseNotification(db: CommonQueryMethods, c: ClaimedNotification, error: string, retryInSeconds: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE notification SET lease_until = NULL, lease_token = NULL, last_error = ${error},
      next_attempt_at = now() + make_interval(secs => ${retryInSeconds})
    WHERE event_id = ${c.eventId}::uuid AND channel = ${c.channel} AND lease_token = ${c.leaseToken}::uuid`);
}

const unsentRow = z.object({ unsent: z.number(), oldestAgeSeconds: z.number() });

/** Notifications not sent yet: how many, and the oldest one's age (0 when none); reads the partial due index. */
export async function unsentNotificationStats(db: CommonQueryMethods) {
  return db.one(sql.type(unsentRow)`
    SELECT count(*)::int AS unsent,
           coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS "oldestAgeSeconds"
    FROM notification WHERE sent_at IS NULL`);
}
