import type { Booking } from '../../domain/booking.js';
import type { CommonQueryMethods } from '../../db/pool.js';
import { requireIntentCancellation } from '../../db/intent-cancellations.js';
import { lockDepositOf } from '../../db/bookings.js';
import { depositIntentKey } from '../../domain/changes.js';
import { noteJob } from '../transact.js';

// CONTRACT "Expiry": when a booking leaves HOLD unpaid (EXPIRED, CANCELLED), every payment intent created for it
// is cancelled at the provider, retried until the provider answers.

/**
 * In the transaction that moves `b` out of HOLD unpaid: the obligation to cancel its intents, and its job. Only a
 * booking whose customer asked to pay can have one (an intent is created after pay_requested_at is set).
 */
export async function requireIntentsCancelled(tx: CommonQueryMethods, b: Booking, now: Date): Promise<void> {
  if (b.payRequestedAt) await reopenIntentCancellation(tx, b.id, now);
}

/**
 * Owes (again) the cancellation of every intent of `bookingId`, due `now`: also when a settled obligation learns
 * of an intent created after it ran (a new generation, a new job), or an open one must run again now (its job,
 * maybe waiting out a backoff, is promoted).
 */
export async function reopenIntentCancellation(tx: CommonQueryMethods, bookingId: number, now: Date): Promise<void> {
  const gen = await requireIntentCancellation(tx, bookingId, now);
  noteJob(tx, { kind: 'intent-cancellations', bookingId, gen, runAt: now, promote: true });
}

/**
 * In the transaction that writes a send or an answer of /pay's create with `idempotencyKey`: when the booking has left
 * HOLD, or its deposit is no longer the one the create is for, the cancellation of its intents is owed again. That
 * cancellation may have listed the intents and read the creates on record before the provider made this one or before
 * this write. The booking's row is share-locked first, so a move out of HOLD (or a change) either commits before this
 * reads it, or waits for this write to commit, before the cancellation it owes can read the creates.
 */
export async function oweCancellationUnlessPayable(tx: CommonQueryMethods, bookingId: number, idempotencyKey: string, now: Date): Promise<void> {
  const b = await lockDepositOf(tx, bookingId);
  if (!b || (b.status === 'HOLD' && depositIntentKey(bookingId, b.depositVersion) === idempotencyKey)) return;
  await reopenIntentCancellation(tx, bookingId, now);
}
