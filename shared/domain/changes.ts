import type { BookingStatus } from './booking-status.js';
import { checkCarHold, checkCarPeriod, checkStayDates, type Booking, type CarBooking, type StayBooking } from './booking.js';
import { DomainError, invalidState, validation } from './errors.js';
import { addDays, hotelToday } from './hotel-dates.js';

// Changing a booking (CONTRACT "Changing a booking"): which fields a request may give, the terms it leads to, what
// those terms must obey, what happens to the deposit, and how a stay's room-night counts move. Pure: the use case
// (shared/usecases/changes.ts) reads and writes.

/** What POST /bookings/{id}/change may carry; the fields given replace the booking's. */
export interface ChangeRequest {
  from?: Date;
  to?: Date;
  carId?: number;
  checkIn?: string;
  checkOut?: string;
  rooms?: number;
  guests?: number;
  roomTypeId?: number;
  ratePlanId?: number;
  quoteId?: number;
}

/** A car booking's changeable terms (booking.changed's before/after). */
export interface CarTerms {
  carId: number;
  from: Date;
  to: Date;
}

/** A stay's changeable terms (booking.changed's before/after). */
export interface StayTerms {
  roomTypeId: number;
  checkIn: string;
  checkOut: string;
  rooms: number;
  guests: number;
  ratePlanId: number | null;
}

export type ChangePlan =
  | { kind: 'car'; before: CarTerms; after: CarTerms; changed: string[] }
  | { kind: 'stay'; before: StayTerms; after: StayTerms; changed: string[]; quoteId: number | null };

const CAR_FIELDS = ['from', 'to', 'carId'] as const;
const STAY_FIELDS = ['checkIn', 'checkOut', 'rooms', 'guests', 'roomTypeId', 'ratePlanId', 'quoteId'] as const;
/** The one thing an ON_TRIP booking may still change: its return. */
const RETURN_FIELD = { car: 'to', stay: 'checkOut' } as const;
const CHANGEABLE: readonly BookingStatus[] = ['HOLD', 'CONFIRMED', 'ON_TRIP'];

export const carTermsOf = (b: CarBooking): CarTerms => ({ carId: b.carId, from: b.from, to: b.to });
export const stayTermsOf = (b: StayBooking): StayTerms => ({
  roomTypeId: b.roomTypeId, checkIn: b.checkIn, checkOut: b.checkOut, rooms: b.rooms, guests: b.guests, ratePlanId: b.ratePlanId,
});

/** Terms as events and answers carry them (instants as ISO strings). */
export const termsOut = (t: CarTerms | StayTerms) =>
  'carId' in t ? { carId: t.carId, from: t.from.toISOString(), to: t.to.toISOString() } : { ...t };

const same = (a: unknown, b: unknown) => (a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b);

/** The names of the terms whose value differs between before and after. */
export const changedTerms = <T extends CarTerms | StayTerms>(before: T, after: T): string[] =>
  (Object.keys(before) as (keyof T)[]).filter((k) => !same(before[k], after[k])).map(String);

/**
 * What the request asks of this booking, judged on the booking alone (locked by the caller), in this order:
 * 400 a field of the other kind; 409 INVALID_STATE when the status allows no change (a HOLD past holdExpiresAt is
 * expiring: it allows none either), or an ON_TRIP booking is asked to change anything but its return; 400 when
 * nothing would change. A new room type keeps no rate plan of the old one: it takes the ratePlanId given, or none.
 */
export function planChange(b: Booking, r: ChangeRequest, now: Date): ChangePlan {
  const foreign = b.kind === 'car' ? STAY_FIELDS : CAR_FIELDS;
  const wrong = foreign.find((f) => r[f] !== undefined);
  if (wrong) throw validation(wrong, `a ${b.kind} booking has no ${wrong}`);
  if (!CHANGEABLE.includes(b.status)) throw invalidState(b.status, 'change');
  if (b.status === 'HOLD' && b.holdExpiresAt && now.getTime() >= b.holdExpiresAt.getTime()) {
    throw new DomainError('INVALID_STATE', 'the hold is past its holdExpiresAt and expiring: it can no longer be changed', {
      status: b.status, holdExpiresAt: b.holdExpiresAt.toISOString(),
    });
  }
  const plan: ChangePlan = b.kind === 'car'
    ? (() => {
        const before = carTermsOf(b);
        const after = { carId: r.carId ?? b.carId, from: r.from ?? b.from, to: r.to ?? b.to };
        return { kind: 'car', before, after, changed: changedTerms(before, after) };
      })()
    : (() => {
        const before = stayTermsOf(b);
        const roomTypeId = r.roomTypeId ?? b.roomTypeId;
        const after: StayTerms = {
          roomTypeId, checkIn: r.checkIn ?? b.checkIn, checkOut: r.checkOut ?? b.checkOut, rooms: r.rooms ?? b.rooms, guests: r.guests ?? b.guests,
          ratePlanId: r.ratePlanId ?? (roomTypeId === b.roomTypeId ? b.ratePlanId : null),
        };
        return { kind: 'stay', before, after, changed: changedTerms(before, after), quoteId: r.quoteId ?? null };
      })();
  if (b.status === 'ON_TRIP') {
    const allowed = RETURN_FIELD[b.kind];
    const other = [...plan.changed, ...(r.quoteId !== undefined ? ['quoteId'] : [])].find((f) => f !== allowed);
    if (other) {
      throw new DomainError('INVALID_STATE', `a booking ON_TRIP may change only its return (${allowed}), not ${other}`, { status: b.status, field: other });
    }
  }
  if (plan.changed.length === 0) throw validation('body', 'the change changes nothing: every field given equals the booking\'s');
  return plan;
}

/** The rules a new hold obeys, on the car terms after the change; ON_TRIP: the period and a return still ahead. */
export function checkCarTerms(status: BookingStatus, t: CarTerms, now: Date): void {
  if (status !== 'ON_TRIP') return checkCarHold(t.from, t.to, now);
  checkCarPeriod(t.from, t.to);
  if (t.to.getTime() <= now.getTime()) throw validation('to', 'the return must stay in the future');
}

/**
 * The date rules of a new stay hold on the terms after the change (1 to 30 nights; checkIn not before today in the
 * hotel's zone); ON_TRIP (already checked in): the checkOut still ahead, after today.
 */
export function checkStayTerms(status: BookingStatus, t: StayTerms, timezone: string, now: Date): void {
  checkStayDates(t.checkIn, t.checkOut);
  const today = hotelToday(now, timezone);
  if (status === 'ON_TRIP') {
    if (t.checkOut <= today) throw validation('checkOut', `the checkOut must stay after today (${today}) in the hotel's time zone`);
  } else if (t.checkIn < today) {
    throw validation('checkIn', `checkIn is before today (${today}) in the hotel's time zone`);
  }
}

/** What the change does with the money: nothing, a new intent for a HOLD (the old ones superseded), or a refund. */
export type DepositEffect = { kind: 'none' } | { kind: 'reprice' } | { kind: 'refund'; amount: number };

export const depositIncrease = (depositAmount: number, newDepositAmount: number) =>
  new DomainError('DEPOSIT_INCREASE', 'a change of a CONFIRMED booking may not raise its deposit', { depositAmount, newDepositAmount });

/**
 * HOLD: a new deposit supersedes the payment intents made for the old one. CONFIRMED: a lower deposit refunds the
 * difference (no fee); a higher one is refused (409 DEPOSIT_INCREASE). ON_TRIP: the deposit never changes (the
 * caller keeps it).
 */
export function depositEffect(status: BookingStatus, before: number, after: number): DepositEffect {
  if (after === before || status === 'ON_TRIP') return { kind: 'none' };
  if (status === 'HOLD') return { kind: 'reprice' };
  if (after > before) throw depositIncrease(before, after);
  return { kind: 'refund', amount: before - after };
}

/** The provider idempotency key of a HOLD's deposit intent: deposit-{id}, then deposit-{id}-v{n} after n deposit changes. */
export const depositIntentKey = (bookingId: number, depositVersion: number): string =>
  depositVersion === 0 ? `deposit-${bookingId}` : `deposit-${bookingId}-v${depositVersion}`;

/**
 * Whether a create's key is for a deposit before `depositVersion` (superseded: versions only grow). A key of another
 * shape is not any deposit's, so it counts as superseded too.
 */
export function isEarlierDepositKey(bookingId: number, key: string, depositVersion: number): boolean {
  const m = /^deposit-(\d+)(?:-v(\d+))?$/.exec(key);
  if (!m || Number(m[1]) !== bookingId) return true;
  return Number(m[2] ?? 0) < depositVersion;
}

export interface NightDelta {
  roomTypeId: number;
  night: string;
  /** Rooms taken (positive) or given back (negative) on this night. */
  delta: number;
}

function eachNight(t: StayTerms, fn: (night: string) => void): void {
  for (let d = t.checkIn; d < t.checkOut; d = addDays(d, 1)) fn(d);
}

/**
 * The room-night counts a stay change moves, by the difference only: per (room type, night), the rooms after minus
 * the rooms before, the nights whose count stays out. Sorted by room type, then night: the lock order.
 */
export function nightDeltas(before: StayTerms, after: StayTerms): NightDelta[] {
  const byNight = new Map<string, NightDelta>();
  const add = (t: StayTerms, sign: 1 | -1) => eachNight(t, (night) => {
    const key = `${t.roomTypeId}|${night}`;
    const d = byNight.get(key) ?? byNight.set(key, { roomTypeId: t.roomTypeId, night, delta: 0 }).get(key)!;
    d.delta += sign * t.rooms;
  });
  add(before, -1);
  add(after, 1);
  return [...byNight.values()].filter((d) => d.delta !== 0)
    .sort((a, b) => a.roomTypeId - b.roomTypeId || (a.night < b.night ? -1 : a.night > b.night ? 1 : 0));
}

/**
 * Free rooms of each night of the new stay that has inventory, in date order, counting the rooms the booking itself
 * holds there (the change gives them back in the same transaction): what the new stay is judged on.
 */
export function freeForChange(
  before: StayTerms,
  after: StayTerms,
  nights: readonly { roomTypeId: number; date: string; available: number }[],
): { date: string; available: number }[] {
  const inStay = (t: StayTerms, rt: number, date: string) => rt === t.roomTypeId && date >= t.checkIn && date < t.checkOut;
  return nights
    .filter((n) => inStay(after, n.roomTypeId, n.date))
    .map((n) => ({ date: n.date, available: n.available + (inStay(before, n.roomTypeId, n.date) ? before.rooms : 0) }));
}
