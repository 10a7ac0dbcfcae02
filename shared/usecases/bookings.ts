import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { forbidden, invalidState, notFound } from '../domain/errors.js';
import { nextStatus, type BookingStatus } from '../domain/booking-status.js';
import { cancellationRefund, mayRunTrip, visibleTo, type Booking, type BookingKind } from '../domain/booking.js';
import { findBooking, moneyOf, transition } from '../db/bookings.js';
import { confirmingPayment } from '../db/payments.js';
import { writeEvent } from '../events/outbox.js';
import { requireIntentsCancelled } from './effects/intents.js';
import { applyInventoryEffect } from './effects/inventory.js';
import { notify } from './effects/notify.js';
import { requestRefund } from './effects/refunds.js';
import { transact } from './transact.js';

export interface BookingView {
  bookingId: number;
  kind: BookingKind;
  status: BookingStatus;
  customerId: number;
  carId: number | null;
  from: string | null;
  to: string | null;
  roomTypeId: number | null;
  checkIn: string | null;
  checkOut: string | null;
  rooms: number | null;
  depositAmount: number;
  currency: string;
  holdExpiresAt: string | null;
  guests: number | null;
  ratePlanId: number | null;
  totalAmount: number | null;
  payment: null | { status: 'SUCCEEDED'; amount: number };
  refund: null | { amount: number; status: 'PENDING' | 'SUCCEEDED' | 'FAILED' };
}

/** The contract's flat shape: the other kind's fields are null. */
function kindFields(b: Booking): Pick<BookingView, 'carId' | 'from' | 'to' | 'roomTypeId' | 'checkIn' | 'checkOut' | 'rooms'> {
  return b.kind === 'car'
    ? { carId: b.carId, from: b.from.toISOString(), to: b.to.toISOString(), roomTypeId: null, checkIn: null, checkOut: null, rooms: null }
    : { carId: null, from: null, to: null, roomTypeId: b.roomTypeId, checkIn: b.checkIn, checkOut: b.checkOut, rooms: b.rooms };
}

export async function getBooking(deps: Deps, actor: Actor, id: number): Promise<BookingView> {
  const b = visibleTo(actor, await findBooking(deps.db, id));
  return bookingView(b, await moneyOf(deps.db, b.id));
}

/** The booking as GET /bookings/{id} shows it, with its payment and latest refund (`moneyOf`). */
export function bookingView(b: Booking, money: Awaited<ReturnType<typeof moneyOf>>): BookingView {
  return {
    bookingId: b.id, kind: b.kind, status: b.status, customerId: b.customerId,
    ...kindFields(b),
    depositAmount: b.depositAmount, currency: b.currency,
    holdExpiresAt: b.status === 'HOLD' ? (b.holdExpiresAt?.toISOString() ?? null) : null,
    guests: b.kind === 'stay' ? b.guests : null, ratePlanId: b.kind === 'stay' ? b.ratePlanId : null, totalAmount: b.totalAmount,
    payment: money.paymentAmount === null ? null : { status: 'SUCCEEDED', amount: money.paymentAmount },
    refund: money.refundAmount === null || money.refundStatus === null ? null : { amount: money.refundAmount, status: money.refundStatus },
  };
}

export interface CancelResult {
  bookingId: number;
  status: 'CANCELLED';
  refundAmount: number;
  currency: string;
}

export async function cancelBooking(deps: Deps, actor: Actor, id: number, reason: string | null): Promise<CancelResult> {
  return transact(deps, async (tx) => {
    const b = visibleTo(actor, await findBooking(tx, id, { forUpdate: true }));
    if (!nextStatus(b.status, 'cancel')) throw invalidState(b.status, 'cancel');
    const now = deps.clock.now();
    const refund = cancellationRefund(b, actor, now);
    await transition(tx, b, 'CANCELLED');
    await applyInventoryEffect(tx, b, b.status, 'CANCELLED', describeActor(actor));
    if (b.status === 'HOLD') await requireIntentsCancelled(tx, b, now);
    const eventId = await writeEvent(tx, 'booking.cancelled', now, {
      bookingId: b.id, customerId: b.customerId, cancelledBy: describeActor(actor), reason, refundAmount: refund, currency: b.currency,
    });
    await notify(tx, { type: 'booking.cancelled', eventId, bookingId: b.id });
    if (refund > 0) {
      const payment = await confirmingPayment(tx, b.id);
      if (!payment) throw new Error(`confirmed booking ${b.id} has no confirming payment`);
      await requestRefund(tx, now, { bookingId: b.id, paymentId: payment.id, paymentIntentId: payment.paymentIntentId, amount: refund, currency: b.currency, reason: 'cancellation' });
    }
    return { bookingId: b.id, status: 'CANCELLED', refundAmount: refund, currency: b.currency };
  });
}

const tripEvents = { pickup: 'booking.started', return: 'booking.completed' } as const;

/** pickup (CONFIRMED → ON_TRIP) and return (ON_TRIP → COMPLETED): the car's host or an operator. */
export async function advanceTrip(deps: Deps, actor: Actor, id: number, action: 'pickup' | 'return') {
  if (actor.role === 'customer') throw forbidden();
  return transact(deps, async (tx) => {
    const b = await findBooking(tx, id, { forUpdate: true });
    if (!b || !mayRunTrip(actor, b)) throw notFound('booking');
    const to = nextStatus(b.status, action);
    if (!to) throw invalidState(b.status, action);
    const now = deps.clock.now();
    await transition(tx, b, to);
    await applyInventoryEffect(tx, b, b.status, to, describeActor(actor));
    await writeEvent(tx, tripEvents[action], now, { bookingId: b.id, customerId: b.customerId, by: describeActor(actor) });
    return { bookingId: b.id, status: to };
  });
}
