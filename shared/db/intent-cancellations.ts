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

// A create is settled ("answered") once the provider has answered it with an intent (every send of its key gets that
// intent back, one sent long ago and carried out late included), or refused it while nothing else could have been
// made with its key. Until then the booking's intent cancellation sends it again (migrations 025, 027).

/**
 * Writes the create before it is sent (once per key), committed on its own. True when this call wrote it: no send
 * of its key was made before (every sender writes the create first).
 */
export async function recordIntentCreate(db: CommonQueryMethods, bookingId: number, c: IntentCreate): Promise<boolean> {
  return (await markIntentCreateSent(db, bookingId, c)).fresh;
}

/**
 * Writes that a send of the create is about to leave (sent_at), the create too when it is new (`fresh`). `sentAt`:
 * the time written, as the database prints it (settleRefusedIntentCreate compares it exactly).
 */
export async function markIntentCreateSent(db: CommonQueryMethods, bookingId: number, c: IntentCreate) {
  return db.one(sql.type(z.object({ fresh: z.boolean(), sentAt: z.string() }))`
    INSERT INTO intent_create (booking_id, idempotency_key, amount, currency, sent_at)
    VALUES (${bookingId}, ${c.idempotencyKey}, ${c.amount}, ${c.currency}, clock_timestamp())
    ON CONFLICT (booking_id, idempotency_key) DO UPDATE SET sent_at = clock_timestamp()
    RETURNING (xmax = 0) AS fresh, sent_at::text AS "sentAt"`);
}

/** The database's time, as it prints it: an attempt takes it before it lists the booking's intents. */
export async function databaseNow(db: CommonQueryMethods): Promise<string> {
  return db.oneFirst(sql.type(z.object({ now: z.string() }))`SELECT clock_timestamp()::text AS now`);
}

/**
 * A replay the provider refused on its only attempt (it made nothing) settles the create with nothing, when nothing
 * else could still make an intent with its key: no send since the replay's own (`ownSentAt`), none in doubt or sent
 * within `lateS` before the attempt listed the booking's intents (`listedAt`), so whatever an earlier send made was in
 * that list, and cancelled. `lastSentAt`: the create's last send before the replay (unansweredIntentCreates). A
 * create the provider refuses for good is then settled instead of retried forever; one sent recently waits.
 */
export async function settleRefusedIntentCreate(
  db: CommonQueryMethods, bookingId: number, idempotencyKey: string,
  t: { lastSentAt: string; ownSentAt: string; listedAt: string; lateS: number },
): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE intent_create SET answered_at = now()
    WHERE booking_id = ${bookingId} AND idempotency_key = ${idempotencyKey} AND answered_at IS NULL AND intent_id IS NULL
      AND sent_at = ${t.ownSentAt}::timestamptz
      AND ${t.lastSentAt}::timestamptz < ${t.listedAt}::timestamptz - make_interval(secs => ${t.lateS})
      AND (doubted_at IS NULL OR doubted_at < ${t.listedAt}::timestamptz - make_interval(secs => ${t.lateS}))`);
  return r.rowCount === 1;
}

/**
 * A cancellation's replay of a create found unanswered got `intentId`: settled (as answerIntentCreate), and doubted
 * (doubted_at) from `unansweredSince`, the last send before the replay (its answer never reached the record: a send
 * in doubt, a process gone mid-send, a write lost), or from now when null (this replay's answer came to a retry).
 * Such a send may still land: while it can, the booking's cancellation looks again (lateIntentCreateSends).
 */
export async function answerReplayedIntentCreate(
  db: CommonQueryMethods, bookingId: number, idempotencyKey: string, intentId: string, unansweredSince: string | null,
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_create SET answered_at = coalesce(answered_at, now()), intent_id = coalesce(intent_id, ${intentId}),
      doubted_at = greatest(doubted_at, coalesce(${unansweredSince}::timestamptz, now()))
    WHERE booking_id = ${bookingId} AND idempotency_key = ${idempotencyKey}`);
}

/**
 * The booking's creates with a send in doubt that the provider may still carry out after `listedAt` (doubted within
 * `lateS`, the provider's lateness, before it), and how long after `listedAt` the last of them can land (ms). Such a
 * send gets the create's intent back while the provider keeps its key; once it has forgotten the key, it makes a new
 * intent that a listing at `listedAt` did not show.
 */
export async function lateIntentCreateSends(
  db: CommonQueryMethods, bookingId: number, t: { listedAt: string; lateS: number },
): Promise<readonly { idempotencyKey: string; landsWithinMs: number }[]> {
  return db.any(sql.type(z.object({ idempotencyKey: z.string(), landsWithinMs: z.number() }))`
    SELECT idempotency_key AS "idempotencyKey",
           ceil(extract(epoch FROM doubted_at + make_interval(secs => ${t.lateS}) - ${t.listedAt}::timestamptz) * 1000)::int AS "landsWithinMs"
    FROM intent_create
    WHERE booking_id = ${bookingId} AND doubted_at >= ${t.listedAt}::timestamptz - make_interval(secs => ${t.lateS})`);
}

/**
 * The attempt did its work but may not settle yet (a send in doubt may still land): the claim ends without counting
 * as a failed attempt, due again in `retryInMs`. False when the token no longer holds the row (re-opened meanwhile).
 */
export async function deferIntentCancellation(db: CommonQueryMethods, c: IntentCancellationClaim, retryInMs: number): Promise<boolean> {
  return releaseLease(db, LEASED.intentCancellation, [c.bookingId], c.leaseToken, { retryInMs, error: null, uncount: true });
}

/**
 * The provider answered the create with `intentId`: settled (also one settled as refused, should that come first;
 * an intent already recorded stands). `doubted`: the answer came to a retry, so an earlier send went unanswered and
 * may still land: in doubt from now as well (as doubtIntentCreate), in the same statement.
 */
export async function answerIntentCreate(
  db: CommonQueryMethods, bookingId: number, idempotencyKey: string, intentId: string, o: { doubted: boolean },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_create SET
      answered_at = CASE WHEN intent_id IS NULL THEN coalesce(answered_at, now()) ELSE answered_at END,
      intent_id = coalesce(intent_id, ${intentId}),
      doubted_at = CASE WHEN ${o.doubted}::boolean THEN now() ELSE doubted_at END
    WHERE booking_id = ${bookingId} AND idempotency_key = ${idempotencyKey}`);
}

/**
 * The provider refused the only send so far of a create the caller wrote itself (recordIntentCreate's true): nothing
 * was made, settled. Not when a send of it is in doubt (doubted_at): that one may still make the intent.
 */
export async function refuseIntentCreate(db: CommonQueryMethods, bookingId: number, idempotencyKey: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_create SET answered_at = now()
    WHERE booking_id = ${bookingId} AND idempotency_key = ${idempotencyKey} AND answered_at IS NULL AND doubted_at IS NULL`);
}

/**
 * A send of the create went unanswered: in doubt (doubted_at), and unanswered again if a refusal of another send had
 * settled it with nothing (an intent answer stands: the late send gets that intent back).
 */
export async function doubtIntentCreate(db: CommonQueryMethods, bookingId: number, idempotencyKey: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE intent_create SET doubted_at = now(), answered_at = CASE WHEN intent_id IS NULL THEN NULL ELSE answered_at END
    WHERE booking_id = ${bookingId} AND idempotency_key = ${idempotencyKey}`);
}

const createRow = z.object({ idempotencyKey: z.string(), amount: z.number(), currency: z.string(), lastSentAt: z.string() });

/** The booking's creates the provider has not answered yet, oldest first. */
/** `lastSentAt`: its last send, as the database prints it (the latest of created_at, sent_at and doubted_at). */
export async function unansweredIntentCreates(
  db: CommonQueryMethods, bookingId: number,
): Promise<readonly (IntentCreate & { lastSentAt: string })[]> {
  return db.any(sql.type(createRow)`
    SELECT idempotency_key AS "idempotencyKey", amount, currency,
           greatest(created_at, sent_at, doubted_at)::text AS "lastSentAt"
    FROM intent_create WHERE booking_id = ${bookingId} AND answered_at IS NULL ORDER BY created_at, idempotency_key`);
}

/** The intents the provider answered the booking's creates with, by the create's Idempotency-Key. */
export async function answeredIntentCreates(db: CommonQueryMethods, bookingId: number): Promise<readonly { idempotencyKey: string; intentId: string }[]> {
  return db.any(sql.type(z.object({ idempotencyKey: z.string(), intentId: z.string() }))`
    SELECT idempotency_key AS "idempotencyKey", intent_id AS "intentId" FROM intent_create
    WHERE booking_id = ${bookingId} AND intent_id IS NOT NULL`);
}
