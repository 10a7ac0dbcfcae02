import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

// The obligation to cancel every payment intent of a booking that left HOLD unpaid (migration 012).

/**
 * Writes (or re-opens) the obligation for a booking, due at `at`; in the caller's transaction, the one that
 * moves the booking out of HOLD (or that learns an intent was created after it did).
 */
export async function requireIntentCancellation(db: CommonQueryMethods, bookingId: number, at: Date): Promise<void> {
  await db.query(sql.typeAlias('void')`
    INSERT INTO intent_cancellation (booking_id, next_attempt_at) VALUES (${bookingId}, ${at.toISOString()}::timestamptz)
    ON CONFLICT (booking_id) DO UPDATE SET next_attempt_at = excluded.next_attempt_at, done_at = NULL`);
}

/**
 * Claims up to `limit` due obligations (SKIP LOCKED) and pushes each one's next attempt to now + `leaseMs`: no other
 * process takes it meanwhile, and one whose process died comes due again after the lease.
 */
export async function claimDueIntentCancellations(db: CommonQueryMethods, now: Date, leaseMs: number, limit: number): Promise<IntentCancellationClaim[]> {
  const leaseUntil = new Date(now.getTime() + leaseMs);
  const rows = await db.any(sql.type(z.object({ bookingId: z.number(), attempts: z.number() }))`
    UPDATE intent_cancellation SET next_attempt_at = ${leaseUntil.toISOString()}::timestamptz
    WHERE booking_id IN (
      SELECT booking_id FROM intent_cancellation
      WHERE done_at IS NULL AND next_attempt_at <= ${now.toISOString()}::timestamptz
      ORDER BY next_attempt_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING booking_id AS "bookingId", attempts`);
  return rows.map((r) => ({ ...r, leaseUntil }));
}

/** A claim: the obligation's booking and the lease its claim set (the token that it is still this claim's). */
export interface IntentCancellationClaim {
  bookingId: number;
  attempts: number;
  leaseUntil: Date;
}

// Both below act only while the row still carries this claim's lease: an obligation re-opened meanwhile (an
// intent created after the booking left HOLD) stays due, so the intent created late is cancelled too.

/** The provider has answered for every intent of the booking: settled. */
export async function completeIntentCancellation(db: CommonQueryMethods, c: IntentCancellationClaim, at: Date): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_cancellation SET done_at = ${at.toISOString()}::timestamptz, attempts = attempts + 1, last_error = NULL
    WHERE booking_id = ${c.bookingId} AND next_attempt_at = ${c.leaseUntil.toISOString()}::timestamptz AND done_at IS NULL`);
}

/** An attempt that did not get every answer: counted, its error kept, tried again at `retryAt`. */
export async function retryIntentCancellation(db: CommonQueryMethods, c: IntentCancellationClaim, retryAt: Date, error: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_cancellation SET attempts = attempts + 1, last_error = ${error.slice(0, 1000)},
      next_attempt_at = ${retryAt.toISOString()}::timestamptz
    WHERE booking_id = ${c.bookingId} AND next_attempt_at = ${c.leaseUntil.toISOString()}::timestamptz AND done_at IS NULL`);
}
