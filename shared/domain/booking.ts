import { boundedTotal } from './money.js';
import type { Actor } from './actor.js';
import type { BookingStatus } from './booking-status.js';
import { notFound, validation } from './errors.js';
import { DAY_MS, checkNightRange } from './nights.js';
import { zonedWallTimeToInstant } from './zoned-time.js';

// ---- the booking ----

/** What every booking has, whatever it books. */
interface BookingBase {
  id: number;
  status: BookingStatus;
  /** Bumped by every change of status: writers that race compare-and-set on it. */
  version: number;
  customerId: number;
  depositAmount: number;
  /** What it was sold at: cars dailyPrice × started days; stays on a rate plan Σ nightly price × rooms; else null. */
  totalAmount: number | null;
  currency: string;
  /** Set while the booking is a HOLD. */
  holdExpiresAt: Date | null;
  /** When the expiry check of a HOLD runs next (later than holdExpiresAt while a payment may be in flight). */
  nextExpiryCheckAt: Date | null;
  /** The customer asked to pay: from then on a payment may be in flight. */
  payRequestedAt: Date | null;
  paymentIntentId: string | null;
  /** How many changes so far changed the deposit of this HOLD: its intents are keyed deposit-{id}-v{n} from 1 on. */
  depositVersion: number;
  /** The generation of the HOLD's job (its id's `g{n}`: expire-{id}-g{n}, paycheck-{id}-g{n}; see domain/jobs.ts). */
  jobGen: number;
}

/** One car for [from, to); the car stays blocked until `to` + its turnaround. */
export interface CarBooking extends BookingBase {
  kind: 'car';
  carId: number;
  hostId: number;
  from: Date;
  to: Date;
}

/** `rooms` rooms of one room type for the nights [checkIn, checkOut), dates in the hotel's zone. */
export interface StayBooking extends BookingBase {
  kind: 'stay';
  roomTypeId: number;
  checkIn: string;
  checkOut: string;
  rooms: number;
  guests: number;
  /** The rate plan it was sold on; null when held without one (then totalAmount is null too). */
  ratePlanId: number | null;
  hotel: { timezone: string; checkInTime: string };
}

export type Booking = CarBooking | StayBooking;
export type BookingKind = Booking['kind'];

// ---- what may be booked ----

export const MAX_CAR_SPAN_MS = 30 * DAY_MS;
export const MAX_STAY_NIGHTS = 30;

/** A car period (hold or search): `to` after `from`, at most 30 days. */
export function checkCarPeriod(from: Date, to: Date): void {
  if (to.getTime() <= from.getTime()) throw validation('to', 'to must be after from');
  if (to.getTime() - from.getTime() > MAX_CAR_SPAN_MS) throw validation('to', 'a booking spans at most 30 days');
}

/** checkCarPeriod's rule as a test, for paths that answer without throwing (the search index's). */
export const isCarPeriod = (from: Date, to: Date): boolean => to.getTime() > from.getTime() && to.getTime() - from.getTime() <= MAX_CAR_SPAN_MS;

/** checkStayDates's rule on a number of nights, as a test. */
export const isStayLength = (nights: number): boolean => nights >= 1 && nights <= MAX_STAY_NIGHTS;

/** No hold starts in the past (so search lists nothing for such a period). */
export const startsInFuture = (from: Date, now: Date): boolean => from.getTime() > now.getTime();

export function checkCarHold(from: Date, to: Date, now: Date): void {
  if (!startsInFuture(from, now)) throw validation('from', 'from must be in the future');
  checkCarPeriod(from, to);
}

/** A stay (hold or search) has 1 to 30 nights; returns how many. */
export const checkStayDates = (checkIn: string, checkOut: string): number =>
  checkNightRange(checkIn, checkOut, MAX_STAY_NIGHTS, { from: 'checkIn', to: 'checkOut', what: 'a stay' });

/** A stay's deposit is the room type's, once per room. */
export const stayDeposit = (perRoom: number, rooms: number): number => boundedTotal(perRoom * rooms, 'rooms', 'the deposit × rooms');

/** The room-night counter a stay occupies in each status; null: it occupies nothing. Cars occupy through the exclusion constraint. */
export function stayCounter(status: BookingStatus): 'held' | 'confirmed' | null {
  if (status === 'HOLD') return 'held';
  return status === 'CONFIRMED' || status === 'ON_TRIP' ? 'confirmed' : null;
}

/** When the customer takes the car / checks in: cancellation deadlines are measured to this instant. */
export function pickupInstant(b: Booking): Date {
  if (b.kind === 'car') return b.from;
  return zonedWallTimeToInstant(b.checkIn, b.hotel.checkInTime, b.hotel.timezone);
}

// ---- who may see and act on it ----

export const isOwner = (a: Actor, b: Booking): boolean => a.role === 'customer' && a.id === b.customerId;
export const isCarHost = (a: Actor, b: Booking): boolean => a.role === 'host' && b.kind === 'car' && a.id === b.hostId;
export const isOperator = (a: Actor): boolean => a.role === 'operator';
/** Pickup and return: the car's host or an operator. */
export const mayRunTrip = (a: Actor, b: Booking): boolean => isCarHost(a, b) || isOperator(a);

/** The booking when the actor may see it; otherwise NOT_FOUND, so existence never leaks. */
export function visibleTo<B extends Booking>(a: Actor, b: B | null): B {
  if (b && (isOwner(a, b) || isCarHost(a, b) || isOperator(a))) return b;
  throw notFound('booking');
}

// ---- cancelling it ----

const HOUR_MS = 3_600_000;

export interface RefundInput {
  deposit: number;
  pickupAt: Date;
  cancelledAt: Date;
  /** Host of the car or an operator: the customer gets everything back. */
  cancelledByProvider: boolean;
}

/** The policy's tiers for a paid booking, in minor units (an integer, rounded down). */
export function refundAmount({ deposit, pickupAt, cancelledAt, cancelledByProvider }: RefundInput): number {
  if (cancelledByProvider) return deposit;
  const before = pickupAt.getTime() - cancelledAt.getTime();
  if (before >= 72 * HOUR_MS) return deposit;
  if (before >= 24 * HOUR_MS) return Math.floor(deposit / 2);
  return 0;
}

/**
 * The whole cancellation rule: what `by` cancelling `b` at `at` gives back. A HOLD was not paid: 0 (a
 * payment that arrives later is refunded in full by the payment path). Anyone but the owner (the car's
 * host, an operator) refunds everything; the owner gets the tiers, measured to the pickup instant.
 */
export function cancellationRefund(b: Booking, by: Actor, at: Date): number {
  if (b.status === 'HOLD') return 0;
  return refundAmount({ deposit: b.depositAmount, pickupAt: pickupInstant(b), cancelledAt: at, cancelledByProvider: !isOwner(by, b) });
}
