import type { Deps } from '../deps.js';
import type { CommonQueryMethods } from '../../db/pool.js';
import { findBooking, transition } from '../../db/bookings.js';
import { insertPayment } from '../../db/payments.js';
import { supersededIntents } from '../../db/changes.js';
import { parseIdText } from '../../domain/ids.js';
import { currencyCode, sameCurrency } from '../../domain/money.js';
import { writeEvent } from '../../events/outbox.js';
import { applyInventoryEffect } from './inventory.js';
import { notify } from './notify.js';
import { requestRefund } from './refunds.js';

export interface PaymentSuccess {
  reference: string;
  paymentIntentId: string;
  /** Null when a provider answer reported the success without it (the webhook brings it later). */
  providerTxnId: string | null;
  amount: number;
  currency: string;
}

export type PaymentOutcome = 'confirmed' | 'refunded' | 'duplicate' | 'unknown_booking';

/** A provider `reference` is the bookingId as text (anything else names no booking). */
export const bookingIdOf = (reference: string) => parseIdText(reference);

/**
 * Applies a provider success once per payment intent (and providerTxnId), in the caller's transaction: the
 * webhook and the provider's answer to a payment check or intent cancellation meet on the intent id, whichever
 * comes first. A success for a HOLD with the exact deposit confirms it; any other success is refunded in full. The
 * booking row is locked, so this and the expiry (same lock, version CAS) are serialised: exactly one of them wins.
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
    const eventId = await writeEvent(tx, 'booking.confirmed', now, { bookingId: b.id, customerId: b.customerId, paymentId, amount: p.amount, currency: p.currency });
    await notify(tx, { type: 'booking.confirmed', eventId, bookingId: b.id });
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
