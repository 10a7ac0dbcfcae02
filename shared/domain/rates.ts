import { DomainError } from './errors.js';
import { boundedTotal } from './money.js';

/** What a rate plan's calendar says about one night. */
export interface CalendarFields {
  /** Per room, in the currency's minor unit; null: never priced (the night cannot be sold on this plan). */
  price: number | null;
  minStay: number;
  maxStay: number;
  closedToArrival: boolean;
  closedToDeparture: boolean;
  stopSell: boolean;
}
export interface CalendarNight extends CalendarFields {
  date: string;
}

/** A night that was never set (the contract's defaults). The one place they are written down. */
export const CALENDAR_DEFAULTS: Readonly<CalendarFields> = Object.freeze({
  price: null, minStay: 1, maxStay: 30, closedToArrival: false, closedToDeparture: false, stopSell: false,
});

/** The fields an operator sets on a range: each one given is written on every night, the others are kept. */
export type CalendarChange = Partial<Omit<CalendarFields, 'price'>> & { price?: number };

export const CALENDAR_FIELDS = ['price', 'minStay', 'maxStay', 'closedToArrival', 'closedToDeparture', 'stopSell'] as const;

/**
 * Highest nightly price: keeps Σ price × rooms over 30 nights and 100 rooms an exact JavaScript integer
 * (3·10^15 < 2^53), whatever the currency.
 */
export const MAX_NIGHT_PRICE = 1_000_000_000_000;

/** A night as stored (or absent): absent nights have the defaults. */
export const nightOrDefault = (date: string, stored: CalendarFields | undefined): CalendarNight => ({
  date, ...(stored ?? CALENDAR_DEFAULTS),
});

/** The night after applying an operator's change. */
export const applyChange = (night: CalendarNight, change: CalendarChange): CalendarNight => {
  const out = { ...night };
  for (const f of CALENDAR_FIELDS) if (change[f] !== undefined) (out[f] as unknown) = change[f];
  return out;
};

export const RESTRICTION_REASONS = ['no_price', 'stop_sell', 'closed_to_arrival', 'closed_to_departure', 'min_stay', 'max_stay'] as const;
export type RestrictionReason = (typeof RESTRICTION_REASONS)[number];
export interface Restriction {
  reason: RestrictionReason;
  date: string;
}

/**
 * Why the calendar forbids the stay, or null. `nights` are the calendar entries of [checkIn, checkOut) in date
 * order (at least one), `departure` the checkOut date's own entry. The first failing reason wins, in the
 * contract's order; within no_price and stop_sell the earliest such night is named.
 */
export function stayRestriction(nights: readonly CalendarNight[], departure: CalendarNight): Restriction | null {
  const unpriced = nights.find((n) => n.price === null);
  if (unpriced) return { reason: 'no_price', date: unpriced.date };
  const stopped = nights.find((n) => n.stopSell);
  if (stopped) return { reason: 'stop_sell', date: stopped.date };
  const arrival = nights[0]!;
  if (arrival.closedToArrival) return { reason: 'closed_to_arrival', date: arrival.date };
  if (departure.closedToDeparture) return { reason: 'closed_to_departure', date: departure.date };
  if (nights.length < arrival.minStay) return { reason: 'min_stay', date: arrival.date };
  if (nights.length > arrival.maxStay) return { reason: 'max_stay', date: arrival.date };
  return null;
}

export interface StayPrice {
  /** Price per room of each night. */
  nights: { date: string; price: number }[];
  /** Σ nightly price × rooms. */
  totalAmount: number;
}

/** The breakdown and total of a stay whose every night is priced (see stayRestriction). */
export function priceStay(nights: readonly CalendarNight[], rooms: number): StayPrice {
  const priced = nights.map((n) => {
    if (n.price === null) throw new Error(`night ${n.date} has no price`);
    return { date: n.date, price: n.price };
  });
  return { nights: priced, totalAmount: priced.reduce((sum, n) => sum + n.price * rooms, 0) };
}

/** Every night of the stay exists in the inventory with at least `rooms` free. */
export const roomsAvailable = (nights: readonly { available: number }[], wanted: number, rooms: number): boolean =>
  nights.length === wanted && nights.every((n) => n.available >= rooms);

/** What a stay is judged on, read in one snapshot or under the hold's locks. */
export interface StayView {
  /** Room availability of [checkIn, checkOut): one entry per existing inventory night. */
  roomNights: readonly { available: number }[];
  nightCount: number;
  rooms: number;
  /** The rate plan's calendar, when the stay is on one. */
  rate: { nights: readonly CalendarNight[]; departure: CalendarNight } | null;
  /** The quoted total the hold must still match, when it comes with a quote. */
  quotedTotal: number | null;
}

export const restricted = (r: Restriction) =>
  new DomainError('STAY_RESTRICTED', `the rate plan's calendar forbids this stay (${r.reason} on ${r.date})`, r);
export const soldOut = () => new DomainError('SOLD_OUT', 'some night of the stay lacks the rooms asked for');
export const priceChanged = (quotedTotal: number, currentTotal: number) =>
  new DomainError('PRICE_CHANGED', 'the quoted total is no longer the price', { quotedTotal, currentTotal });

/**
 * Accepts the stay (its price, null without a rate plan) or throws the refusal. Order where several apply
 * (the contract leaves it open): STAY_RESTRICTED (the request's dates break the hotel's rules), then SOLD_OUT,
 * then PRICE_CHANGED (only a re-quote would help).
 */
export function judgeStay(v: StayView): StayPrice | null {
  const r = v.rate && stayRestriction(v.rate.nights, v.rate.departure);
  if (r) throw restricted(r);
  if (!roomsAvailable(v.roomNights, v.nightCount, v.rooms)) throw soldOut();
  if (!v.rate) return null;
  const price = priceStay(v.rate.nights, v.rooms);
  boundedTotal(price.totalAmount, 'rooms', "the stay's total (Σ nightly price × rooms)");
  if (v.quotedTotal !== null && v.quotedTotal !== price.totalAmount) throw priceChanged(v.quotedTotal, price.totalAmount);
  return price;
}

/** A car's price counts every started day: totalAmount = dailyPrice × carDays. */
export const carDays = (from: Date, to: Date): number => Math.ceil((to.getTime() - from.getTime()) / 86_400_000);
