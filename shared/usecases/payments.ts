import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { DomainError, invalidState, notFound, validation } from '../domain/errors.js';
import type { WebhookEvent } from '../psp/webhook-event.js';
import { findBooking, markPayRequested, savePaymentIntent } from '../db/bookings.js';
import { recordWebhookEvent } from '../db/payments.js';
import { findRefundForWebhook } from '../db/refunds.js';
import { isOwner, type Booking } from '../domain/booking.js';
import { depositIntentKey } from '../domain/changes.js';
import { supersedeIntent } from '../db/changes.js';
import { answerIntentCreate, doubtIntentCreate, recordIntentCreate, refuseIntentCreate, type IntentCreate } from '../db/intent-cancellations.js';
import { ProviderRejectedError, ProviderUnreachableError, type PaymentIntent } from '../psp/client.js';
import { applyPaymentSuccess, bookingIdOf, type PaymentOutcome, type PaymentSuccess } from './effects/payments.js';
import { oweCancellationUnlessPayable, reopenIntentCancellation } from './effects/intents.js';
import { settleRefundOnce } from './effects/refunds.js';
import { transact } from './transact.js';
import type { DatabaseTransactionConnection } from '../db/pool.js';

/** How often /pay creates an intent again when a change replaces the deposit while one is being created. */
const PAY_ATTEMPTS = 3;

/**
 * Creates (first call) or reuses (provider idempotency key deposit-{id}, deposit-{id}-v{n} after n deposit changes)
 * the intent for the current deposit; returns the checkout URL.
 */
export async function startPayment(deps: Deps, actor: Actor, id: number): Promise<string> {
  let b = await findBooking(deps.db, id);
  if (!b || !isOwner(actor, b)) throw notFound('booking');
  for (let attempt = 1; ; attempt++) {
    if (b.status !== 'HOLD') throw invalidState(b.status, 'pay');
    // From here on the payment state is "unknown" until the provider says otherwise: expiry asks it first.
    // Conditional on HOLD, so no intent is created for a booking that expired or was cancelled meanwhile.
    if (!(await markPayRequested(deps.db, b.id, deps.clock.now()))) {
      throw invalidState((await findBooking(deps.db, b.id))?.status ?? 'unknown', 'pay');
    }
    const intent = await createIntent(deps, b);
    // The provider never answered (or not so as to settle it): it may still create this intent, later. Its create
    // is on record, unanswered, so the booking's intent cancellation sends it again and cancels what it gets.
    if ('inDoubt' in intent) throw new DomainError('UNAVAILABLE', intent.inDoubt);
    const saved = await savePaymentIntent(deps.db, b.id, intent.id, b.depositVersion);
    // The booking may have left HOLD while the intent was being created (createIntent then owed its cancellation
    // again): send no one to pay it.
    const after = await findBooking(deps.db, b.id);
    if (!after || after.status !== 'HOLD') throw invalidState(after?.status ?? 'unknown', 'pay');
    if (saved && after.depositVersion === b.depositVersion) return intent.checkoutUrl;
    // A change replaced the deposit meanwhile: this intent is for the old amount. Superseded (cancelled, and a
    // success for it refunded in full); the next attempt creates the intent of the new deposit.
    const superseded = b!;
    await transact(deps, async (tx) => {
      await supersedeIntent(tx, superseded.id, intent.id, superseded.depositVersion);
      await reopenIntentCancellation(tx, superseded.id, deps.clock.now());
    });
    if (attempt >= PAY_ATTEMPTS) throw new DomainError('UNAVAILABLE', 'the booking kept changing while its payment was prepared; try again');
    b = after;
  }
}

/** The create /pay sends for the booking's current deposit: its Idempotency-Key and body. */
const intentCreateOf = (b: Booking): IntentCreate =>
  ({ idempotencyKey: depositIntentKey(b.id, b.depositVersion), amount: b.depositAmount, currency: b.currency });

/**
 * The intent of the booking's current deposit, or `inDoubt` (the message for the customer) when the provider may
 * have created it without saying so (no answer: a timeout, a reset, a 5xx, an unreadable answer; or a 409 or a
 * refusal that came to a retry of an attempt that had timed out). The create is written down before it is sent (a
 * crash in between leaves it unanswered), its answer after; a create in doubt is marked so (doubtIntentCreate): only
 * an intent answer settles it then, and the booking's intent cancellation sends it again until one comes. An intent
 * answered to a retry is doubted too: the attempt before it went unanswered and may still land (the cancellation
 * waits out the provider's lateness after a doubt before it settles). Each of
 * these writes owes that cancellation again when the booking has left HOLD or changed its deposit meanwhile
 * (oweCancellationUnlessPayable): it may have run without this create, and nothing after the write is relied on (a
 * lost connection, a crash).
 */
async function createIntent(deps: Deps, b: Booking): Promise<PaymentIntent | { inDoubt: string }> {
  const create = intentCreateOf(b);
  const key = create.idempotencyKey;
  const write = <T>(fn: (tx: DatabaseTransactionConnection) => Promise<T>) => transact(deps, async (tx) => {
    await oweCancellationUnlessPayable(tx, b.id, key, deps.clock.now());
    return fn(tx);
  });
  const fresh = await write((tx) => recordIntentCreate(tx, b.id, create));
  let intent: PaymentIntent;
  // The intent came to a retry: an attempt before it went unanswered and may still land (doubted, as below).
  let retried = false;
  try {
    intent = await deps.psp.createPaymentIntent(
      { amount: create.amount, currency: create.currency, reference: String(b.id) }, key, { onAnswer: (attempts) => (retried = attempts > 1) },
    );
  } catch (e) {
    const rejected = e instanceof ProviderRejectedError ? e : null;
    if (e instanceof ProviderUnreachableError || rejected?.afterUnanswered || rejected?.status === 409) {
      await write((tx) => doubtIntentCreate(tx, b.id, key));
      return { inDoubt: rejected ? 'the payment provider refused to create the payment; try again' : 'the payment provider did not answer; try again' };
    }
    if (rejected) {
      // Refused (its only attempt): nothing was made by this send. Settled only when no other send of its key came
      // before it (this request wrote the create); a 429 says "not now" and leaves it as it is.
      if (rejected.madeNothing && fresh) await refuseIntentCreate(deps.db, b.id, key);
      throw new DomainError('UNAVAILABLE', 'the payment provider refused to create the payment');
    }
    throw e;
  }
  await write((tx) => answerIntentCreate(tx, b.id, key, intent.id, { doubted: retried }));
  return intent;
}

export type { PaymentOutcome, PaymentSuccess } from './effects/payments.js';

/** The payment a payment_intent.succeeded event reports (null for other types); effects are keyed on its providerTxnId. */
function successOf({ type, data: d }: WebhookEvent): PaymentSuccess | null {
  if (type !== 'payment_intent.succeeded') return null;
  if (!d.providerTxnId) throw validation('data.providerTxnId', 'data.providerTxnId: Required');
  return { reference: d.reference, paymentIntentId: d.paymentIntentId, amount: d.amount, currency: d.currency, providerTxnId: d.providerTxnId };
}

/** Applies a verified provider event once per event id; its effect is committed before this returns. */
export async function handleWebhook(deps: Deps, event: WebhookEvent & { created: number }): Promise<string> {
  const success = successOf(event);
  return transact(deps, async (tx) => {
    if (!(await recordWebhookEvent(tx, event.id, event.type, event))) return 'duplicate_event';
    if (success) return applyPaymentSuccess(tx, deps, success);
    const d = event.data;
    switch (event.type) {
      case 'refund.succeeded':
      case 'refund.failed': {
        const refund = await findRefundForWebhook(tx, {
          providerRefundId: d.refundId ?? null, bookingId: bookingIdOf(d.reference), paymentIntentId: d.paymentIntentId, amount: d.amount,
        });
        if (!refund) return 'unknown_refund';
        const settled = await settleRefundOnce(tx, deps, refund, event.type === 'refund.succeeded' ? 'SUCCEEDED' : 'FAILED', d.refundId ?? null);
        return settled ? 'refund_settled' : 'refund_already_settled';
      }
      default:
        return 'ignored';
    }
  });
}

/** A `succeeded` intent found by asking the provider (a payment check, an intent cancellation), through the webhook's code path. */
export async function confirmFromProvider(deps: Deps, p: PaymentSuccess): Promise<PaymentOutcome> {
  return transact(deps, (tx) => applyPaymentSuccess(tx, deps, p));
}

