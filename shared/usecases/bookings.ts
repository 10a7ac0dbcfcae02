import { CheckExclusionConstraintViolationError, CheckIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { DomainError, forbidden, invalidState, notFound, validation } from '../domain/errors.js';
import { nextStatus, type BookingAction, type BookingStatus } from '../domain/booking-status.js';
import { refundAmount } from '../domain/cancellation-policy.js';
import { zonedWallTimeToInstant } from '../domain/zoned-time.js';
import { findRoomType } from '../db/hotels.js';
import { lockNights, listNights, attributeChanges, moveRooms, type NightRow } from '../db/inventory.js';
import { findBooking, insertCarHold, insertStayHold, moneyOf, transition, type BookingRow } from '../db/bookings.js';
import { confirmingPayment } from '../db/payments.js';
import { insertRefund } from '../db/refunds.js';
import { completeKey } from '../db/idempotency.js';
import { writeEvent } from '../events/outbox.js';
import { applyInventoryEffect } from './inventory-effects.js';
import { isCarHost, isOperator, isOwner, visibleTo } from './access.js';
import type { CommonQueryMethods } from '../db/pool.js';

const DAY_MS = 86_400_000;
export const MAX_CAR_SPAN_MS = 30 * DAY_MS;
export const MAX_STAY_NIGHTS = 30;

export type HoldInput =
  | { kind: 'car'; carId: number; from: Date; to: Date }
  | { kind: 'stay'; roomTypeId: number; checkIn: string; checkOut: string; rooms: number };

export interface HoldResult {
  bookingId: number;
  kind: 'car' | 'stay';
  status: 'HOLD';
  holdExpiresAt: string;
  depositAmount: number;
  currency: string;
  paymentUrl: string;
}

export const nightsBetween = (checkIn: string, checkOut: string) =>
  Math.round((Date.parse(`${checkOut}T00:00:00Z`) - Date.parse(`${checkIn}T00:00:00Z`)) / DAY_MS);

/** Validation that needs the clock; the shape was checked at the edge. */
export function checkCarPeriod(from: Date, to: Date, now: Date): void {
  if (from.getTime() <= now.getTime()) throw validation('from', 'from must be in the future');
  if (to.getTime() <= from.getTime()) throw validation('to', 'to must be after from');
  if (to.getTime() - from.getTime() > MAX_CAR_SPAN_MS) throw validation('to', 'a booking spans at most 30 days');
}

export function checkStayDates(checkIn: string, checkOut: string): void {
  const nights = nightsBetween(checkIn, checkOut);
  if (nights < 1) throw validation('checkOut', 'checkOut must be after checkIn');
  if (nights > MAX_STAY_NIGHTS) throw validation('checkOut', 'a stay has at most 30 nights');
}

export function checkHoldInput(input: HoldInput, now: Date): void {
  if (input.kind === 'car') checkCarPeriod(input.from, input.to, now);
  else checkStayDates(input.checkIn, input.checkOut);
}

export interface HoldOptions {
  /** Completes the customer's idempotency key in the same transaction as the hold. */
  idempotencyKey?: string;
}

export async function holdBooking(deps: Deps, actor: Actor, input: HoldInput, opts: HoldOptions = {}): Promise<HoldResult> {
  if (actor.role !== 'customer') throw forbidden();
  const now = deps.clock.now();
  const holdExpiresAt = new Date(now.getTime() + deps.config.HOLD_TTL_S * 1000);
  checkHoldInput(input, now);

  const finish = async (tx: CommonQueryMethods, bookingId: number, depositAmount: number, currency: string, data: object) => {
    const result: HoldResult = {
      bookingId, kind: input.kind, status: 'HOLD', holdExpiresAt: holdExpiresAt.toISOString(), depositAmount, currency,
      paymentUrl: `${deps.config.PUBLIC_BASE_URL}/bookings/${bookingId}/pay`,
    };
    await writeEvent(tx, {
      type: 'booking.held', key: bookingId, occurredAt: now,
      data: { bookingId, kind: input.kind, customerId: actor.id, ...data, holdExpiresAt: result.holdExpiresAt, depositAmount, currency },
    });
    // Losing this means a request that took over our expired lease answered first: roll the hold back.
    if (opts.idempotencyKey && !(await completeKey(tx, actor.id, opts.idempotencyKey, 201, result))) {
      throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key was completed by another request');
    }
    return result;
  };

  if (input.kind === 'car') {
    try {
      return await deps.db.transaction(async (tx) => {
        const hold = await insertCarHold(tx, { customerId: actor.id, carId: input.carId, from: input.from, to: input.to, holdExpiresAt });
        if (!hold) throw notFound('car');
        return finish(tx, hold.id, hold.depositAmount, hold.currency, {
          carId: input.carId, from: input.from.toISOString(), to: input.to.toISOString(),
        });
      });
    } catch (e) {
      if (e instanceof CheckExclusionConstraintViolationError) {
        throw new DomainError('CAR_UNAVAILABLE', 'the car is already booked for an overlapping period (turnaround included)');
      }
      throw e;
    }
  }

  const roomType = await findRoomType(deps.db, input.roomTypeId);
  if (!roomType) throw notFound('room type');
  const deposit = roomType.depositAmount * input.rooms;
  const wanted = nightsBetween(input.checkIn, input.checkOut);
  const enough = (nights: readonly NightRow[]) => nights.length === wanted && nights.every((n) => n.available >= input.rooms);
  // Fast refusal without queueing on the night locks when the stay is already sold out (the hot
  // last-rooms case); acceptance is only ever decided under the locks below.
  if (!enough(await listNights(deps.db, roomType.id, input.checkIn, input.checkOut))) throw soldOut();
  try {
    return await deps.db.transaction(async (tx) => {
      if (!enough(await lockNights(tx, roomType.id, input.checkIn, input.checkOut))) throw soldOut();
      const id = await insertStayHold(tx, {
        customerId: actor.id, roomTypeId: roomType.id, checkIn: input.checkIn, checkOut: input.checkOut,
        rooms: input.rooms, depositAmount: deposit, currency: roomType.currency, holdExpiresAt,
      });
      await attributeChanges(tx, { actor: describeActor(actor), reason: 'hold', bookingId: id });
      await moveRooms(tx, { roomTypeId: roomType.id, from: input.checkIn, to: input.checkOut, rooms: input.rooms, give: 'held' });
      return finish(tx, id, deposit, roomType.currency, {
        roomTypeId: roomType.id, checkIn: input.checkIn, checkOut: input.checkOut, rooms: input.rooms,
      });
    });
  } catch (e) {
    // The CHECK is the last line of defence should the locked read above ever be bypassed.
    if (e instanceof CheckIntegrityConstraintViolationError) throw soldOut();
    throw e;
  }
}

const soldOut = () => new DomainError('SOLD_OUT', 'some night of the stay lacks the rooms asked for');

export interface BookingView {
  bookingId: number;
  kind: 'car' | 'stay';
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
  payment: null | { status: 'SUCCEEDED'; amount: number };
  refund: null | { amount: number; status: 'PENDING' | 'SUCCEEDED' | 'FAILED' };
}

export async function getBooking(deps: Deps, actor: Actor, id: number): Promise<BookingView> {
  const b = visibleTo(actor, await findBooking(deps.db, id));
  const money = await moneyOf(deps.db, b.id);
  return {
    bookingId: b.id, kind: b.kind, status: b.status, customerId: b.customerId,
    carId: b.carId, from: b.from, to: b.to,
    roomTypeId: b.roomTypeId, checkIn: b.checkIn, checkOut: b.checkOut, rooms: b.rooms,
    depositAmount: b.depositAmount, currency: b.currency,
    holdExpiresAt: b.status === 'HOLD' ? b.holdExpiresAt : null,
    payment: money.paymentAmount === null ? null : { status: 'SUCCEEDED', amount: money.paymentAmount },
    refund: money.refundAmount === null ? null : { amount: money.refundAmount, status: money.refundStatus! },
  };
}

/** When the customer takes the car / checks in: policy deadlines are measured to this instant. */
export function pickupInstant(b: BookingRow): Date {
  if (b.kind === 'car') return new Date(b.from!);
  return zonedWallTimeToInstant(b.checkIn!, b.hotelCheckInTime!, b.hotelTimezone!);
}

export interface CancelResult {
  bookingId: number;
  status: 'CANCELLED';
  refundAmount: number;
  currency: string;
}

export async function cancelBooking(deps: Deps, actor: Actor, id: number, reason: string | null): Promise<CancelResult> {
  return deps.db.transaction(async (tx) => {
    const b = visibleTo(actor, await findBooking(tx, id, { forUpdate: true }));
    if (!nextStatus(b.status, 'cancel')) throw invalidState(b.status, 'cancel');
    const now = deps.clock.now();
    const refund = b.status === 'HOLD' ? 0 : refundAmount({
      deposit: b.depositAmount, pickupAt: pickupInstant(b), cancelledAt: now, cancelledByProvider: !isOwner(actor, b),
    });
    await transition(tx, b, 'CANCELLED');
    await applyInventoryEffect(tx, b, b.status, 'CANCELLED', describeActor(actor));
    await writeEvent(tx, {
      type: 'booking.cancelled', key: b.id, occurredAt: now,
      data: { bookingId: b.id, customerId: b.customerId, cancelledBy: describeActor(actor), reason, refundAmount: refund, currency: b.currency },
    });
    if (refund > 0) {
      const payment = await confirmingPayment(tx, b.id);
      if (!payment) throw new Error(`confirmed booking ${b.id} has no confirming payment`);
      await requestRefund(tx, now, { bookingId: b.id, paymentId: payment.id, paymentIntentId: payment.paymentIntentId, amount: refund, currency: b.currency, reason: 'cancellation' });
    }
    return { bookingId: b.id, status: 'CANCELLED', refundAmount: refund, currency: b.currency };
  });
}

/** Creates a PENDING refund and its refund.requested event; the refund worker pays it. */
export async function requestRefund(
  tx: CommonQueryMethods,
  now: Date,
  r: { bookingId: number; paymentId: number | null; paymentIntentId: string; amount: number; currency: string; reason: string },
): Promise<void> {
  const refund = await insertRefund(tx, r);
  await writeEvent(tx, {
    type: 'refund.requested', key: r.bookingId, occurredAt: now,
    data: { bookingId: r.bookingId, refundId: refund.id, amount: r.amount, currency: r.currency, paymentIntentId: r.paymentIntentId, reason: r.reason },
  });
}

const tripEvents = { pickup: 'booking.started', return: 'booking.completed' } as const;

/** pickup (CONFIRMED → ON_TRIP) and return (ON_TRIP → COMPLETED): the car's host or an operator. */
export async function advanceTrip(deps: Deps, actor: Actor, id: number, action: 'pickup' | 'return') {
  if (actor.role === 'customer') throw forbidden();
  return deps.db.transaction(async (tx) => {
    const b = await findBooking(tx, id, { forUpdate: true });
    if (!b || !(isCarHost(actor, b) || isOperator(actor))) throw notFound('booking');
    const to = nextStatus(b.status, action as BookingAction);
    if (!to) throw invalidState(b.status, action);
    const now = deps.clock.now();
    await transition(tx, b, to);
    await applyInventoryEffect(tx, b, b.status, to, describeActor(actor));
    await writeEvent(tx, { type: tripEvents[action], key: b.id, occurredAt: now, data: { bookingId: b.id, customerId: b.customerId, by: describeActor(actor) } });
    return { bookingId: b.id, status: to };
  });
}
