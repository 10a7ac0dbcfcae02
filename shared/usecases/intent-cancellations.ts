import type { Deps } from './deps.js';
import type { Booking } from '../domain/booking.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { findBooking } from '../db/bookings.js';
import {
  completeIntentCancellation, requireIntentCancellation, retryIntentCancellation, type IntentCancellationClaim,
} from '../db/intent-cancellations.js';
import { ProviderRejectedError, type PaymentIntent } from '../psp/client.js';
import { confirmFromProvider } from './payments.js';
import { supersededIntents } from '../db/changes.js';
import { sameCurrency } from '../domain/money.js';

// CONTRACT "Expiry": when a booking leaves HOLD unpaid (EXPIRED, CANCELLED), every payment intent created for it
// is cancelled at the provider, retried until the provider answers; an intent found already succeeded is refunded
// in full, whether or not its webhook ever arrives. CONTRACT "Changing a booking": so are the intents of a HOLD whose
// deposit a change replaced (not the one of its current deposit).

/**
 * In the transaction that moves `b` out of HOLD unpaid: the obligation to cancel its intents. Only a booking whose
 * customer asked to pay can have one (the intent is created after pay_requested_at is set, and only for a HOLD).
 */
export async function requireIntentsCancelled(tx: CommonQueryMethods, b: Booking, now: Date): Promise<void> {
  if (b.payRequestedAt) await requireIntentCancellation(tx, b.id, now);
}

/** 1 s, 2 s, 4 s … capped at 5 min between attempts while the provider does not answer. */
export const cancelRetryDelayMs = (attempts: number) => Math.min(300_000, 1000 * 2 ** Math.min(20, attempts));

export type IntentCancellationOutcome = { kind: 'done'; cancelled: number; refunded: number } | { kind: 'retry'; error: string };

/**
 * One attempt at a claimed obligation: every intent of the booking (the provider's list by reference, and the one
 * the booking saved) is cancelled; one that has succeeded instead is recorded like its webhook would be
 * (`applyPaymentSuccess`: once per intent, refunded in full since the booking is no longer a HOLD). Settled once
 * the provider has answered for all of them; any failure (unreachable, 401, 429, …) retries with backoff.
 */
export async function cancelIntentsOf(deps: Deps, claim: IntentCancellationClaim): Promise<IntentCancellationOutcome> {
  const b = await findBooking(deps.db, claim.bookingId);
  let cancelled = 0;
  let refunded = 0;
  try {
    if (b) {
      const listed = await deps.psp.listPaymentIntents(String(b.id));
      const ids = new Set(listed.map((i) => i.id));
      const toCancel: (PaymentIntent | string)[] = [];
      if (b.status === 'HOLD') {
        // A HOLD whose deposit a change replaced: its superseded intents (and any listed intent that cannot pay the
        // current deposit) go; the intent of the current deposit stays payable.
        const superseded = await supersededIntents(deps.db, b.id);
        toCancel.push(...listed.filter((i) => superseded.has(i.id) || i.amount !== b.depositAmount || !sameCurrency(i.currency, b.currency)));
        toCancel.push(...[...superseded].filter((id) => !ids.has(id)));
      } else {
        toCancel.push(...listed);
        if (b.paymentIntentId && !ids.has(b.paymentIntentId)) toCancel.push(b.paymentIntentId);
      }
      for (const item of toCancel) {
        const answer = await cancelOne(deps, item);
        if (answer?.status === 'canceled') cancelled++;
        if (answer?.status === 'succeeded') {
          const outcome = await confirmFromProvider(deps, {
            reference: String(b.id), paymentIntentId: answer.id, amount: answer.amount, currency: answer.currency,
            providerTxnId: answer.providerTxnId ?? null,
          });
          if (outcome === 'refunded') refunded++;
        }
      }
    }
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    await retryIntentCancellation(deps.db, claim, new Date(deps.clock.now().getTime() + cancelRetryDelayMs(claim.attempts)), error);
    return { kind: 'retry', error };
  }
  await completeIntentCancellation(deps.db, claim, deps.clock.now());
  return { kind: 'done', cancelled, refunded };
}

/** The intent after the provider's answer to its cancellation (null: the provider knows no such intent). */
async function cancelOne(deps: Deps, item: PaymentIntent | string): Promise<PaymentIntent | null> {
  if (typeof item !== 'string' && (item.status === 'canceled' || item.status === 'succeeded')) return item;
  const id = typeof item === 'string' ? item : item.id;
  try {
    return await deps.psp.cancelIntent(id);
  } catch (e) {
    if (e instanceof ProviderRejectedError && e.status === 404) return null;
    throw e;
  }
}
