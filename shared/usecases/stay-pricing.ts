import { createHash } from 'node:crypto';
import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { notFound, validation } from '../domain/errors.js';
import { hotelToday } from '../domain/hotel-dates.js';
import { judgeStay, type StayPrice } from '../domain/rates.js';
import { canonicalRequest, checkGuests, checkQuoteForHold, type StayRequest } from '../domain/quotes.js';
import { findRatePlan, findStayCatalogue, listCalendar, type StayCatalogue, type StayNights } from '../db/rate-plans.js';
import { readStayShared } from './stay-batches.js';
import { lockNights } from '../db/inventory.js';
import { findQuote } from '../db/quotes.js';
import type { CommonQueryMethods } from '../db/pool.js';
import type { PreparedDb } from '../db/prepared.js';
import { checkStayDates, stayDeposit } from '../domain/booking.js';
import { nightsBetween } from '../domain/nights.js';

/** A stay as a quote or a hold asks for it (defaults applied at the edge). */
export interface StayInput {
  roomTypeId: number;
  checkIn: string;
  checkOut: string;
  rooms: number;
  guests: number;
  ratePlanId?: number;
  quoteId?: number;
}

/** A stay that passed every check needing the catalogue and the clock; what is left is decided on the nights. */
export interface PreparedStay {
  customerId: number;
  roomTypeId: number;
  checkIn: string;
  checkOut: string;
  nightCount: number;
  rooms: number;
  guests: number;
  ratePlanId: number | null;
  /** The quote the hold comes with: its total must still be the price. */
  quote: { id: number; totalAmount: number } | null;
  depositPerRoom: number;
  currency: string;
}

/**
 * Validation of a quote or a stay hold before anything is decided (for holds, before the rate limiter): dates
 * (1–30 nights, checkIn not before today in the hotel's zone), the room type (404), the rate plan (404; another
 * room type's: 400 ratePlanId), guests ≤ maxGuests × rooms, and the quote: the customer's (else 404), made for
 * this very request (else 400 quoteId), not past validUntil (409 QUOTE_EXPIRED).
 */
export async function prepareStay(deps: Deps, actor: Actor, s: StayInput): Promise<PreparedStay> {
  checkStayDates(s.checkIn, s.checkOut);
  if (s.quoteId !== undefined && s.ratePlanId === undefined) throw validation('ratePlanId', 'a quoteId needs the ratePlanId it was made for');
  const now = deps.clock.now();
  const stay = checkStay(actor, s, await findStayCatalogue(deps.db, s.roomTypeId, s.ratePlanId ?? null), now);
  if (s.quoteId === undefined) return stay;
  const q = await findQuote(deps.db, s.quoteId, actor.id);
  if (!q) throw notFound('quote');
  checkQuoteForHold(q, quoteFingerprint(requestOf(actor.id, s as StayInput & { ratePlanId: number })), now);
  return { ...stay, quote: { id: q.id, totalAmount: q.totalAmount } };
}

/** The checks that need the room type's catalogue entry (null: no such room type) and the clock. */
export function checkStay(actor: Actor, s: StayInput, c: StayCatalogue | null, now: Date): PreparedStay {
  if (!c) throw notFound('room type');
  if (s.ratePlanId !== undefined) {
    if (c.ratePlanRoomTypeId === null) throw notFound('rate plan');
    if (c.ratePlanRoomTypeId !== s.roomTypeId) throw validation('ratePlanId', 'the rate plan belongs to another room type');
  }
  const today = hotelToday(now, c.timezone);
  if (s.checkIn < today) throw validation('checkIn', `checkIn is before today (${today}) in the hotel's time zone`);
  checkGuests(s.guests, s.rooms, c.maxGuests);
  stayDeposit(c.depositAmount, s.rooms); // 400 when deposit × rooms is beyond MAX_MONEY, before the rate limiter
  return {
    customerId: actor.id, roomTypeId: s.roomTypeId, checkIn: s.checkIn, checkOut: s.checkOut,
    nightCount: nightsBetween(s.checkIn, s.checkOut), rooms: s.rooms, guests: s.guests,
    ratePlanId: s.ratePlanId ?? null, quote: null, depositPerRoom: c.depositAmount, currency: c.currency,
  };
}

/** What a quote stores and a hold must match: SHA-256 of the request's canonical form. */
export const quoteFingerprint = (r: StayRequest): string => createHash('sha256').update(canonicalRequest(r)).digest('hex');

export const requestOf = (customerId: number, s: StayInput & { ratePlanId: number }): StayRequest => ({
  customerId, roomTypeId: s.roomTypeId, ratePlanId: s.ratePlanId, checkIn: s.checkIn, checkOut: s.checkOut, rooms: s.rooms, guests: s.guests,
});

/** The judgement of `p` on what was read (one snapshot, or under the hold's locks). */
export const judge = (p: PreparedStay, n: StayNights): StayPrice | null =>
  judgeStay({ ...n, nightCount: p.nightCount, rooms: p.rooms, quotedTotal: p.quote?.totalAmount ?? null });

/**
 * Judges the stay on one unlocked snapshot (room nights and calendar read by a single statement). Quotes are
 * decided so; a hold uses it only to refuse early (the hot sold-out case) without queueing on the locks.
 */
export async function judgeUnlocked(db: PreparedDb, p: PreparedStay): Promise<StayPrice | null> {
  const read = await readStayShared(db, p);
  if (!read) throw notFound('room type');
  return judge(p, read.nights);
}

/**
 * Judges the stay under the hold's locks, in the hold's transaction: the room nights FOR UPDATE in date order
 * (as every inventory writer), then the rate plan FOR SHARE, then the calendar, read after that lock so it
 * includes every calendar change committed before it and none after. Lock order everywhere: room nights before
 * the plan; calendar writers take only the plan (then its nights), so no cycle can form.
 */
export async function judgeLocked(tx: CommonQueryMethods, p: PreparedStay): Promise<StayPrice | null> {
  const roomNights = await lockNights(tx, p.roomTypeId, p.checkIn, p.checkOut);
  let rate = null;
  if (p.ratePlanId !== null) {
    if (!(await findRatePlan(tx, p.ratePlanId, 'share'))) throw notFound('rate plan');
    const calendar = await listCalendar(tx, p.ratePlanId, p.checkIn, p.nightCount + 1);
    rate = { nights: calendar.slice(0, p.nightCount), departure: calendar[p.nightCount]! };
  }
  return judge(p, { roomNights, rate });
}
