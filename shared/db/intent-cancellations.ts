import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { claimLease, leaseState, LEASED, releaseLease } from './leases.js';

// The obligation to cancel every payment intent of a booking that left HOLD unpaid (migration 012), worked by its
// job under the one lease design (shared/db/leases.ts).

/**
 * Writes or re-opens the obligation for a booking, due at `at`, in the caller's transaction (the one that moves the
 * booking out of HOLD, or that learns an intent was created after it did). A re-open drops any claim in flight
 * (its outcome no longer counts: the intent created late must be cancelled too), and a re-open of a settled row
 * moves it to a new generation (its finished job's id stays retained in Redis). Returns the row's generation.
 */
export async function requireIntentCancellation(db: CommonQueryMethods, bookingId: number, at: Date): Promise<number> {
  return db.oneFirst(sql.type(z.object({ gen: z.number() }))`
    INSERT INTO intent_cancellation (booking_id, next_attempt_at) VALUES (${bookingId}, ${at.toISOString()}::timestamptz)
    ON CONFLICT (booking_id) DO UPDATE SET next_attempt_at = excluded.next_attempt_at, done_at = NULL,
      lease_until = NULL, lease_token = NULL,
      job_gen = intent_cancellation.job_gen + (CASE WHEN intent_cancellation.done_at IS NULL THEN 0 ELSE 1 END)
    RETURNING job_gen AS gen`);
}

/** A claim: the obligation's booking, the attempts so far (this one included), and the lease token. */
export interface IntentCancellationClaim {
  bookingId: number;
  attempts: number;
  leaseToken: string;
}

export async function claimIntentCancellation(db: CommonQueryMethods, bookingId: number, gen: number, leaseMs: number): Promise<IntentCancellationClaim | null> {
  const lease = await claimLease(db, LEASED.intentCancellation, [bookingId], gen, leaseMs);
  return lease && { bookingId, attempts: lease.attempts, leaseToken: lease.token };
}

export const intentCancellationLeaseState = (db: CommonQueryMethods, bookingId: number) => leaseState(db, LEASED.intentCancellation, [bookingId]);

/** The provider has answered for every intent of the booking: settled (false: re-opened meanwhile, or not ours). */
export async function completeIntentCancellation(db: CommonQueryMethods, c: IntentCancellationClaim): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE intent_cancellation SET done_at = now(), last_error = NULL, lease_until = NULL, lease_token = NULL
    WHERE booking_id = ${c.bookingId} AND lease_token = ${c.leaseToken}::uuid AND done_at IS NULL`);
  return r.rowCount === 1;
}

/** An attempt that did not get every answer: its error kept, tried again `retryInMs` from now. */
export async function retryIntentCancellation(
  db: CommonQueryMethods, c: IntentCancellationClaim, a: { retryInMs: number; error: string; uncount?: boolean },
): Promise<boolean> {
  return releaseLease(db, LEASED.intentCancellation, [c.bookingId], c.leaseToken, a);
}

/** An intent create /pay sends: its Idempotency-Key and body (migration 025). */
export interface IntentCreate {
  idempotencyKey: string;
  amount: number;
  currency: string;
}

/** Writes the create before it is sent (once per key), committed on its own. */
export async function recordIntentCreate(db: CommonQueryMethods, bookingId: number, c: IntentCreate): Promise<void> {
  await db.query(sql.typeAlias('void')`
    INSERT INTO intent_create (booking_id, idempotency_key, amount, currency)
    VALUES (${bookingId}, ${c.idempotencyKey}, ${c.amount}, ${c.currency})
    ON CONFLICT (booking_id, idempotency_key) DO NOTHING`);
}

/** The provider answered the create with `intentId` (or, `intentId` null, refused it: nothing was made). */
export async function answerIntentCreate(db: CommonQueryMethods, bookingId: number, idempotencyKey: string, intentId: string | null): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_create SET answered_at = now(), intent_id = ${intentId}
    WHERE booking_id = ${bookingId} AND idempotency_key = ${idempotencyKey} AND answered_at IS NULL`);
}

const createRow = z.object({ idempotencyKey: z.string(), amount: z.number(), currency: z.string() });

/** The booking's creates the provider has not answered yet, oldest first. */
export async function unansweredIntentCreates(db: CommonQueryMethods, bookingId: number): Promise<readonly IntentCreate[]> {
  return db.any(sql.type(createRow)`
    SELECT idempotency_key AS "idempotencyKey", amount, currency
    FROM intent_create WHERE booking_id = ${bookingId} AND answered_at IS NULL ORDER BY created_at, idempotency_key`);
}
