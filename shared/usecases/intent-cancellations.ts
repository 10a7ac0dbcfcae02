import type { Deps } from './deps.js';
import { backoffMs } from '../domain/backoff.js';
import { inWords, type JobOutcome } from '../domain/jobs.js';
import { findBooking } from '../db/bookings.js';
import {
  answerIntentCreate, claimIntentCancellation, completeIntentCancellation, intentCancellationLeaseState, retryIntentCancellation,
  unansweredIntentCreates, type IntentCancellationClaim,
} from '../db/intent-cancellations.js';
import { ProviderRejectedError, type PaymentIntent } from '../psp/client.js';
import { QUEUES } from '../queues/registry.js';
import { confirmFromProvider } from './payments.js';
import { unclaimedOutcome } from './unclaimed.js';
import { supersededIntents } from '../db/changes.js';
import { depositIntentKey } from '../domain/changes.js';
import { sameCurrency } from '../domain/money.js';

// CONTRACT "Expiry": when a booking leaves HOLD unpaid (EXPIRED, CANCELLED), every payment intent created for it
// is cancelled at the provider, retried until the provider answers; an intent found already succeeded is refunded
// in full, whether or not its webhook ever arrives. The obligation is written by the requireIntentsCancelled effect.
// CONTRACT "Changing a booking": so are the intents of a HOLD whose deposit a change replaced (not the one of its
// current deposit); the change re-opens the obligation (reopenIntentCancellation).

export type IntentCancellationOutcome =
  | { kind: 'done'; cancelled: number; refunded: number }
  | { kind: 'reopened' }
  | { kind: 'retry'; inMs: number; error: string }
  | { kind: 'throttled'; forMs: number; error: string };

/**
 * One attempt at a claimed obligation: every intent of the booking (the provider's list by reference, the one the
 * booking saved, and those of creates /pay sent that were never answered, sent again) is cancelled; one that has
 * succeeded instead is recorded like its webhook would be (`applyPaymentSuccess`: once per intent, refunded in
 * full since the booking is no longer a HOLD). Settled once the provider has answered for all of them; any failure
 * (unreachable, 401, 429, …) retries with backoff.
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
      const settle = async (item: PaymentIntent | string) => {
        const answer = await cancelOne(deps, item);
        if (answer?.status === 'canceled') cancelled++;
        if (answer?.status === 'succeeded') {
          const outcome = await confirmFromProvider(deps, {
            reference: String(b.id), paymentIntentId: answer.id, amount: answer.amount, currency: answer.currency,
            providerTxnId: answer.providerTxnId ?? null,
          });
          if (outcome === 'refunded') refunded++;
        }
      };
      for (const item of toCancel) await settle(item);
      const settled = new Set(toCancel.map((i) => (typeof i === 'string' ? i : i.id)));
      // Then the creates /pay sent that the provider never answered, each sent again: the intent the provider made,
      // or one made now (a late original then gets it back), is cancelled, and the create is answered. Not the
      // current deposit's create of a HOLD: that intent may still be paid. One that fails does not hold up the rest;
      // the attempt is retried after them.
      const current = b.status === 'HOLD' ? depositIntentKey(b.id, b.depositVersion) : null;
      let replayFailure: unknown = null;
      for (const c of await unansweredIntentCreates(deps.db, b.id)) {
        if (c.idempotencyKey === current) continue;
        try {
          const intent = await deps.psp.createPaymentIntent({ amount: c.amount, currency: c.currency, reference: String(b.id) }, c.idempotencyKey);
          if (!settled.has(intent.id)) await settle(intent);
          await answerIntentCreate(deps.db, b.id, c.idempotencyKey, intent.id);
        } catch (e) {
          // Refused (4xx): nothing was made with that key. A 409 (the key in flight) or a 429 is no answer yet.
          if (e instanceof ProviderRejectedError && e.madeNothing) {
            await answerIntentCreate(deps.db, b.id, c.idempotencyKey, null);
          } else {
            replayFailure ??= e;
          }
        }
      }
      if (replayFailure) throw replayFailure;
    }
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    if (e instanceof ProviderRejectedError && e.status === 429 && e.retryAfterMs !== null) {
      await retryIntentCancellation(deps.db, claim, { retryInMs: e.retryAfterMs, error, uncount: true });
      return { kind: 'throttled', forMs: e.retryAfterMs, error };
    }
    const inMs = backoffMs(claim.attempts, QUEUES['intent-cancellations'].backoff);
    await retryIntentCancellation(deps.db, claim, { retryInMs: inMs, error });
    return { kind: 'retry', inMs, error };
  }
  // Re-opened meanwhile (an intent created after the booking left HOLD): this attempt may have missed it.
  if (!(await completeIntentCancellation(deps.db, claim))) return { kind: 'reopened' };
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

/** The intent-cancellation job (cancel-intents-{bookingId}-g{gen}). */
export async function runIntentCancellationJob(deps: Deps, job: { bookingId: number; gen: number }): Promise<JobOutcome> {
  const claim = await claimIntentCancellation(deps.db, job.bookingId, job.gen, deps.config.LEASE_S * 1000);
  if (!claim) return unclaimedOutcome(await intentCancellationLeaseState(deps.db, job.bookingId), job.gen, deps.clock.now());
  const o = await cancelIntentsOf(deps, claim);
  const attempt = `attempt ${claim.attempts}`;
  switch (o.kind) {
    case 'done':
      return { kind: 'done', result: 'done', log: `${attempt}: ${o.cancelled} cancelled, ${o.refunded} refunded (had succeeded)` };
    case 'reopened':
      return { kind: 'retry', inMs: 0, error: 're-opened during the attempt', log: `${attempt}: re-opened meanwhile (an intent created late); again now` };
    case 'throttled':
      return { kind: 'paused', forMs: o.forMs, log: `${attempt}: provider 429; queue paused ${inWords(o.forMs)} (not counted)` };
    default:
      return { kind: 'retry', inMs: o.inMs, error: o.error, log: `${attempt}: ${o.error}; next attempt ${inWords(o.inMs)}` };
  }
}
