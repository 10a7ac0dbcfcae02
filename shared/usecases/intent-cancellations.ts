import type { Deps } from './deps.js';
import { backoffMs } from '../domain/backoff.js';
import { inWords, type JobOutcome } from '../domain/jobs.js';
import { findBooking } from '../db/bookings.js';
import {
  claimIntentCancellation, completeIntentCancellation, intentCancellationLeaseState, retryIntentCancellation,
  unansweredIntentCreates, type IntentCancellationClaim,
  answeredIntentCreates, databaseNow, doubtIntentCreate, markIntentCreateSent, settleRefusedIntentCreate,
  answerReplayedIntentCreate, deferIntentCancellation, lateIntentCreateSends,
} from '../db/intent-cancellations.js';
import { ProviderRejectedError, ProviderUnreachableError, type PaymentIntent } from '../psp/client.js';
import { providerLatenessS } from '../psp/attempt-policy.js';
import { QUEUES } from '../queues/registry.js';
import { confirmFromProvider } from './payments.js';
import { unclaimedOutcome } from './unclaimed.js';
import { supersededIntents } from '../db/changes.js';
import { isEarlierDepositKey } from '../domain/changes.js';
import { sameCurrency } from '../domain/money.js';

// CONTRACT "Expiry": when a booking leaves HOLD unpaid (EXPIRED, CANCELLED), every payment intent created for it
// is cancelled at the provider, retried until the provider answers; an intent found already succeeded is refunded
// in full, whether or not its webhook ever arrives. The obligation is written by the requireIntentsCancelled effect.
// CONTRACT "Changing a booking": so are the intents of a HOLD whose deposit a change replaced (not the one of its
// current deposit); the change re-opens the obligation (reopenIntentCancellation).

export type IntentCancellationOutcome =
  | { kind: 'done'; cancelled: number; refunded: number }
  | { kind: 'reopened' }
  | { kind: 'waiting'; inMs: number; cancelled: number; refunded: number }
  | { kind: 'retry'; inMs: number; error: string }
  | { kind: 'throttled'; forMs: number; error: string };

/**
 * One attempt at a claimed obligation: every intent of the booking (the provider's list by reference, the one the
 * booking saved, and those of creates /pay sent that were never answered, sent again) is cancelled; one that has
 * succeeded instead is recorded like its webhook would be (`applyPaymentSuccess`: once per intent, refunded in
 * full since the booking is no longer a HOLD). Settled once the provider has answered for all of them, on a listing
 * made after every send of the creates that went unanswered is past the provider's lateness (else `waiting`: it
 * looks again then); any failure (unreachable, 401, 429, …) retries with backoff.
 */
export async function cancelIntentsOf(deps: Deps, claim: IntentCancellationClaim): Promise<IntentCancellationOutcome> {
  let cancelled = 0;
  let refunded = 0;
  let waitMs = 0;
  try {
    const listedAt = await databaseNow(deps.db);
    const listed = await deps.psp.listPaymentIntents(String(claim.bookingId));
    // What the creates on record were answered with, listed or not (the provider's list is not the only record), and
    // those it has not answered yet.
    const answered = await answeredIntentCreates(deps.db, claim.bookingId);
    const unanswered = await unansweredIntentCreates(deps.db, claim.bookingId);
    // The booking is read after all three: an intent or a create is for the deposit version of the booking /pay read,
    // so every one above is for this version or an earlier one. One judged superseded here is superseded for good; a
    // change committed since re-opens the obligation (the claim no longer counts) and the next attempt judges again.
    const b = await findBooking(deps.db, claim.bookingId);
    if (b) {
      const ids = new Set(listed.map((i) => i.id));
      const toCancel: (PaymentIntent | string)[] = [];
      const hold = b.status === 'HOLD';
      const superseded = (key: string) => !hold || isEarlierDepositKey(b.id, key, b.depositVersion);
      if (hold) {
        // A HOLD whose deposit a change replaced: its superseded intents (recorded so, or made for an earlier deposit's
        // create, and any listed intent that cannot pay the current deposit) go; the current deposit's stays payable.
        const gone = await supersededIntents(deps.db, b.id);
        for (const c of answered) if (superseded(c.idempotencyKey)) gone.add(c.intentId);
        toCancel.push(...listed.filter((i) => gone.has(i.id) || i.amount !== b.depositAmount || !sameCurrency(i.currency, b.currency)));
        toCancel.push(...[...gone].filter((id) => !ids.has(id)));
      } else {
        toCancel.push(...listed);
        const known = new Set([...answered.map((c) => c.intentId), ...(b.paymentIntentId ? [b.paymentIntentId] : [])]);
        toCancel.push(...[...known].filter((id) => !ids.has(id)));
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
      // or one made now (a late original then gets it back), is cancelled, and the create is answered. For a
      // HOLD, only an earlier deposit's create: the current deposit's intent may still be paid. One that fails does not hold up the rest;
      // the attempt is retried after them. A refusal (any 4xx) of this send says nothing of an earlier send that
      // left the create unanswered, which the provider may still carry out (a timed-out /pay, this cancellation's
      // own replay that timed out before the 4xx, a process killed mid-send). So a refused replay settles the create
      // with nothing only once every earlier send is older than the provider's lateness (2 × LEASE_S) at this
      // attempt's listing: what they made was listed and cancelled above. Until then the attempt is retried; a
      // create the provider refuses for good is settled then, not retried forever.
      const lateS = providerLatenessS(deps.config.LEASE_S, deps.psp.longestCallMs);
      let replayFailure: unknown = null;
      for (const c of unanswered) {
        if (!superseded(c.idempotencyKey)) continue;
        const own = await markIntentCreateSent(deps.db, b.id, c);
        try {
          let retried = false;
          const intent = await deps.psp.createPaymentIntent(
            { amount: c.amount, currency: c.currency, reference: String(b.id) }, c.idempotencyKey, { onAnswer: (attempts) => (retried = attempts > 1) },
          );
          if (!settled.has(intent.id)) await settle(intent);
          // Answered; the earlier sends (and this one's unanswered attempts) are doubted: they may still land.
          await answerReplayedIntentCreate(deps.db, b.id, c.idempotencyKey, intent.id, retried ? null : c.lastSentAt);
        } catch (e) {
          const rejected = e instanceof ProviderRejectedError ? e : null;
          const refusedForGood = rejected?.madeNothing
            && await settleRefusedIntentCreate(deps.db, b.id, c.idempotencyKey, { lastSentAt: c.lastSentAt, ownSentAt: own.sentAt, listedAt, lateS });
          if (refusedForGood) continue;
          if (e instanceof ProviderUnreachableError || rejected?.afterUnanswered || rejected?.status === 409) {
            await doubtIntentCreate(deps.db, b.id, c.idempotencyKey);
          }
          replayFailure ??= e;
        }
      }
      if (replayFailure) throw replayFailure;
      // A send that went unanswered may still be carried out, up to the provider's lateness after it: with the key
      // the provider still holds, it gets the create's intent back (cancelled above); with a key the provider has
      // forgotten (Stripe does after 24 h, the sandbox on demand), it makes a new intent this listing did not show.
      // So the obligation is settled only by a listing made after every such send is past that lateness; until
      // then the attempt has done what it could and looks again once the last of them is past it.
      const late = await lateIntentCreateSends(deps.db, b.id, { listedAt, lateS });
      waitMs = Math.max(0, ...late.filter((c) => superseded(c.idempotencyKey)).map((c) => c.landsWithinMs));
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
  if (waitMs > 0) {
    const inMs = waitMs + 100;
    if (!(await deferIntentCancellation(deps.db, claim, inMs))) return { kind: 'reopened' };
    return { kind: 'waiting', inMs, cancelled, refunded };
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
    case 'waiting':
      return {
        kind: 'later', at: new Date(deps.clock.now().getTime() + o.inMs),
        log: `${attempt}: ${o.cancelled} cancelled, ${o.refunded} refunded (had succeeded); a create's send that went unanswered may still land: listed again ${inWords(o.inMs)}`,
      };
    case 'reopened':
      return { kind: 'retry', inMs: 0, error: 're-opened during the attempt', log: `${attempt}: re-opened meanwhile (an intent created late); again now` };
    case 'throttled':
      return { kind: 'paused', forMs: o.forMs, log: `${attempt}: provider 429; queue paused ${inWords(o.forMs)} (not counted)` };
    default:
      return { kind: 'retry', inMs: o.inMs, error: o.error, log: `${attempt}: ${o.error}; next attempt ${inWords(o.inMs)}` };
  }
}
