import { CheckExclusionConstraintViolationError, CheckIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import type { CommonQueryMethods } from '../db/pool.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { DomainError } from '../domain/errors.js';
import { visibleTo, type Booking, type CarBooking, type StayBooking } from '../domain/booking.js';
import { soldOut } from '../domain/rates.js';
import { depositEffect, planChange, termsOut, type ChangePlan, type ChangeRequest, type DepositEffect } from '../domain/changes.js';
import { findBooking, moneyOf } from '../db/bookings.js';
import { confirmingPayment } from '../db/payments.js';
import { supersedeCurrentIntent } from '../db/changes.js';
import { writeEvent } from '../events/outbox.js';
import { bookingView, type BookingView } from './bookings.js';
import { idempotent, type Outcome, type Remember } from './idempotency.js';
import { requireIntentsCancelled } from './effects/intents.js';
import { requestRefund } from './effects/refunds.js';
import { notify } from './effects/notify.js';
import { transact } from './transact.js';
import { prepareCarChange, prepareStayChange } from './change-terms.js';

// POST /bookings/{id}/change (CONTRACT "Changing a booking"): one transaction (`transact`, which adds the jobs its
// effects noted right after the commit), opened here and only here. It locks the
// booking row (as expiry, payment and cancellation do, and compares-and-sets its version), judges the request on
// it, takes what the new terms need under the constraints that decide a hold while freeing what they no longer need,
// and writes booking.changed with the money that follows: a HOLD's superseded intents are owed a cancellation, a
// CONFIRMED booking's lower deposit a refund of the difference. Any refusal rolls all of it back.

type Terms = ReturnType<typeof termsOut>;

/** 200: the booking as GET /bookings/{id} shows it, plus what the change did. */
export interface ChangeResult extends BookingView {
  change: { before: Terms; after: Terms; depositDelta: number };
}

export interface ChangeOptions {
  idempotencyKey?: string;
  /** The body as received: a replay of the key must carry the same (and name the same booking). */
  body: unknown;
}

/**
 * The route's entry: the Idempotency-Key first (a replay answers here, with the first outcome), then the change.
 * Keys are scoped to the caller (role and id) and kept apart from POST /bookings' keys; the booking id is part of
 * the request a replay must repeat.
 */
export async function changeBooking(
  deps: Deps, actor: Actor, bookingId: number, request: ChangeRequest, o: ChangeOptions,
): Promise<{ outcome: Outcome<ChangeResult>; replayed: boolean }> {
  const scope = o.idempotencyKey === undefined
    ? undefined
    : { customerId: actor.id, key: `change:${actor.role}:${o.idempotencyKey}`, request: { bookingId, body: o.body } };
  return idempotent<ChangeResult>(deps, scope, (remember) => changeInOneTransaction(deps, actor, bookingId, request, remember));
}

async function changeInOneTransaction(
  deps: Deps, actor: Actor, id: number, request: ChangeRequest, remember?: Remember<ChangeResult>,
): Promise<ChangeResult> {
  try {
    return await transact(deps, async (tx) => {
      const b = visibleTo(actor, await findBooking(tx, id, { forUpdate: true }));
      const now = deps.clock.now();
      const plan = planChange(b, request, now);
      const prepared = plan.kind === 'car'
        ? await prepareCarChange(tx, actor, b as CarBooking, plan.after, now)
        : await prepareStayChange(tx, actor, b as StayBooking, plan, now);
      // DEPOSIT_INCREASE is decided before any inventory is touched.
      const effect = depositEffect(b.status, b.depositAmount, prepared.depositAmount);
      if (effect.kind === 'reprice') await supersedeCurrentIntent(tx, b.id);
      const after = await prepared.apply(effect.kind === 'reprice');
      const depositDelta = prepared.depositAmount - b.depositAmount;
      await writeChanged(tx, b, plan, now, {
        changedBy: describeActor(actor), depositAmount: prepared.depositAmount, depositDelta, totalAmount: after.totalAmount,
        refundAmount: effect.kind === 'refund' ? effect.amount : 0,
      });
      await settleDeposit(tx, b, effect, now);
      const result: ChangeResult = {
        ...bookingView(after, await moneyOf(tx, id)),
        change: { before: termsOut(plan.before), after: termsOut(plan.after), depositDelta },
      };
      await remember?.(tx, result);
      return result;
    });
  } catch (e) {
    if (e instanceof CheckExclusionConstraintViolationError) {
      throw new DomainError('CAR_UNAVAILABLE', 'the car is already booked for an overlapping period (turnaround included)');
    }
    // The CHECK is the last line of defence should the judgement under the locks ever be bypassed.
    if (e instanceof CheckIntegrityConstraintViolationError) throw soldOut();
    throw e;
  }
}

interface ChangedMoney {
  changedBy: string;
  depositAmount: number;
  depositDelta: number;
  totalAmount: number | null;
  refundAmount: number;
}

/** booking.changed and its notifications (sms and push, as for booking.confirmed). */
async function writeChanged(tx: CommonQueryMethods, b: Booking, plan: ChangePlan, now: Date, m: ChangedMoney): Promise<void> {
  const common = { bookingId: b.id, customerId: b.customerId, status: b.status as 'HOLD' | 'CONFIRMED' | 'ON_TRIP', currency: b.currency, ...m };
  if (plan.kind === 'car') {
    const carTerms = (t: typeof plan.before) => ({ carId: t.carId, from: t.from.toISOString(), to: t.to.toISOString() });
    const eventId = await writeEvent(tx, 'booking.changed', now, { ...common, kind: 'car', before: carTerms(plan.before), after: carTerms(plan.after) });
    await notify(tx, { type: 'booking.changed', eventId, bookingId: b.id });
  } else {
    const eventId = await writeEvent(tx, 'booking.changed', now, { ...common, kind: 'stay', before: plan.before, after: plan.after });
    await notify(tx, { type: 'booking.changed', eventId, bookingId: b.id });
  }
}

/**
 * The money a new deposit sets off, in the change's transaction. HOLD: the intents made for the old deposit were
 * superseded; when the customer asked to pay, they are owed a cancellation (the intent-cancellation work, retried until
 * the provider answers; it keeps the intent of the current deposit). CONFIRMED: the difference is refunded from the
 * confirming payment (refund.requested, paid asynchronously by the refund work, no fee).
 */
async function settleDeposit(tx: CommonQueryMethods, b: Booking, effect: DepositEffect, now: Date): Promise<void> {
  if (effect.kind === 'reprice') return requireIntentsCancelled(tx, b, now);
  if (effect.kind !== 'refund') return;
  const payment = await confirmingPayment(tx, b.id);
  if (!payment) throw new Error(`confirmed booking ${b.id} has no confirming payment`);
  await requestRefund(tx, now, {
    bookingId: b.id, paymentId: payment.id, paymentIntentId: payment.paymentIntentId, amount: effect.amount, currency: b.currency, reason: 'change',
  });
}
