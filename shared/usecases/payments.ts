import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { DomainError, invalidState, notFound, validation } from '../domain/errors.js';
import type { WebhookEvent } from '../psp/webhook-event.js';
import { findBooking, markPayRequested, savePaymentIntent, transition } from '../db/bookings.js';
import { insertPayment, recordWebhookEvent } from '../db/payments.js';
import { findRefundForWebhook } from '../db/refunds.js';
import { writeEvent } from '../events/outbox.js';
import { applyInventoryEffect } from './inventory-effects.js';
import { requireIntentCancellation } from '../db/intent-cancellations.js';
import { requestRefund, settleRefundOnce } from './refunds.js';
import { isOwner, type Booking } from '../domain/booking.js';
import { depositIntentKey } from '../domain/changes.js';
import { supersedeIntent, supersededIntents } from '../db/changes.js';
import { parseIdText } from '../domain/ids.js';
import { ProviderRejectedError, ProviderUnreachableError } from '../psp/client.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { currencyCode, sameCurrency } from '../domain/money.js';

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
    const saved = await savePaymentIntent(deps.db, b.id, intent.id, b.depositVersion);
    // The booking may have left HOLD while the intent was being created, and its intents' cancellation may have
    // run before this one existed: owe it again, so this intent is cancelled too, and send no one to pay it.
    const after = await findBooking(deps.db, b.id);
    if (!after || after.status !== 'HOLD') {
      await requireIntentCancellation(deps.db, b.id, deps.clock.now());
      throw invalidState(after?.status ?? 'unknown', 'pay');
    }
    if (saved && after.depositVersion === b.depositVersion) return intent.checkoutUrl;
    // A change replaced the deposit meanwhile: this intent is for the old amount. Superseded (cancelled, and a
    // success for it refunded in full); the next attempt creates the intent of the new deposit.
    await deps.db.transaction(async (tx) => {
      await supersedeIntent(tx, b!.id, intent.id, b!.depositVersion);
      await requireIntentCancellation(tx, b!.id, deps.clock.now());
    });
    if (attempt >= PAY_ATTEMPTS) throw new DomainError('UNAVAILABLE', 'the booking kept changing while its payment was prepared; try again');
    b = after;
  }
}

async function createIntent(deps: Deps, b: Booking) {
  try {
    return await deps.psp.createPaymentIntent(
      { amount: b.depositAmount, currency: b.currency, reference: String(b.id) },
      depositIntentKey(b.id, b.depositVersion),
    );
  } catch (e) {
    if (e instanceof ProviderUnreachableError) {
      throw new DomainError('UNAVAILABLE', 'the payment provider did not answer; try again');
    }
    if (e instanceof ProviderRejectedError) {
      throw new DomainError('UNAVAILABLE', 'the payment provider refused to create the payment');
    }
    throw e;
  }
}

export interface PaymentSuccess {
  reference: string;
  paymentIntentId: string;
  /** Null when a provider answer reported the success without it (the webhook brings it later). */
  providerTxnId: string | null;
  amount: number;
  currency: string;
}

/** A provider `reference` is the bookingId as text (anything else names no booking). */
const bookingIdOf = (reference: string) => parseIdText(reference);

export type PaymentOutcome = 'confirmed' | 'refunded' | 'duplicate' | 'unknown_booking';


/**
 * Applies a provider success once per payment intent (and providerTxnId), in the caller's transaction: the
 * webhook and the provider's answer to expiry or intent cancellation meet on the intent id, whichever comes first. A success for a HOLD
 * with the exact deposit confirms it; any other success is refunded in full. The booking row is locked,
 * so this and the expiry (same lock, version CAS) are serialised: exactly one of them wins.
 */
export async function applyPaymentSuccess(tx: CommonQueryMethods, deps: Pick<Deps, 'clock'>, given: PaymentSuccess): Promise<PaymentOutcome> {
  // Currency codes compare without regard to case (a provider such as Stripe sends `vnd`); kept in upper case.
  const p = { ...given, currency: currencyCode(given.currency) };
  const id = bookingIdOf(p.reference);
  const b = id === null ? null : await findBooking(tx, id, { forUpdate: true });
  if (!b) return 'unknown_booking';
  // An intent a change superseded no longer pays the deposit, whatever its amount.
  const superseded = b.depositVersion > 0 && (await supersededIntents(tx, b.id)).has(p.paymentIntentId);
  const confirms = b.status === 'HOLD' && !superseded && p.amount === b.depositAmount && sameCurrency(p.currency, b.currency);
  const paymentId = await insertPayment(tx, {
    bookingId: b.id, providerTxnId: p.providerTxnId, paymentIntentId: p.paymentIntentId,
    amount: p.amount, currency: p.currency, outcome: confirms ? 'CONFIRMED' : 'REFUNDED',
  });
  if (paymentId === null) return 'duplicate';
  const now = deps.clock.now();
  if (confirms) {
    await transition(tx, b, 'CONFIRMED');
    await applyInventoryEffect(tx, b, 'HOLD', 'CONFIRMED', 'system:payment');
    await writeEvent(tx, 'booking.confirmed', now, { bookingId: b.id, customerId: b.customerId, paymentId, amount: p.amount, currency: p.currency });
    return 'confirmed';
  }
  const reason = b.status !== 'HOLD' ? `payment for ${b.status} booking`
    : superseded ? 'payment for an intent a change of the deposit superseded' : 'amount does not match the deposit';
  if (p.amount === 0) return 'refunded'; // nothing was taken, nothing to give back
  await requestRefund(tx, now, {
    bookingId: b.id, paymentId, paymentIntentId: p.paymentIntentId, amount: p.amount, currency: p.currency, reason,
  });
  return 'refunded';
}

/** The payment a payment_intent.succeeded event reports (null for other types); effects are keyed on its providerTxnId. */
function successOf({ type, data: d }: WebhookEvent): PaymentSuccess | null {
  if (type !== 'payment_intent.succeeded') return null;
  if (!d.providerTxnId) throw validation('data.providerTxnId', 'data.providerTxnId: Required');
  return { reference: d.reference, paymentIntentId: d.paymentIntentId, amount: d.amount, currency: d.currency, providerTxnId: d.providerTxnId };
}

/** Applies a verified provider event once per event id; its effect is committed before this returns. */
export async function handleWebhook(deps: Deps, event: WebhookEvent & { created: number }): Promise<string> {
  const success = successOf(event);
  return deps.db.transaction(async (tx) => {
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

/** Expiry-side confirmation: a `succeeded` intent found by asking the provider, through the webhook's code path. */
export async function confirmFromProvider(deps: Deps, p: PaymentSuccess): Promise<PaymentOutcome> {
  return deps.db.transaction((tx) => applyPaymentSuccess(tx, deps, p));
}

