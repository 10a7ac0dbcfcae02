import type { CommonQueryMethods } from '../db/pool.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { notFound, validation } from '../domain/errors.js';
import { stayCounter, stayDeposit, type Booking, type CarBooking, type StayBooking } from '../domain/booking.js';
import { carDays, judgeStay } from '../domain/rates.js';
import { boundedTotal, sameCurrency } from '../domain/money.js';
import { nightsBetween } from '../domain/nights.js';
import { checkGuests, checkQuoteForHold } from '../domain/quotes.js';
import { checkCarTerms, checkStayTerms, freeForChange, nightDeltas, type CarTerms, type StayTerms } from '../domain/changes.js';
import { findCar } from '../db/cars.js';
import { findQuote } from '../db/quotes.js';
import { findRatePlan, findStayCatalogue, listCalendar } from '../db/rate-plans.js';
import { attributeChanges } from '../db/inventory.js';
import { applyNightDeltas, lockNightsOfBoth, updateCarTerms, updateStayTerms } from '../db/changes.js';
import { quoteFingerprint, requestOf } from './stay-pricing.js';

// The two kinds of change, each in two steps inside the change's transaction (shared/usecases/changes.ts): judge and
// price the new terms on the catalogue (every rule a new hold obeys), then apply them under the same database
// constraints that decide a hold — a refusal at either step rolls everything back.

/** New terms that passed every check needing the catalogue and the clock; applying them decides the rest. */
export interface PreparedChange {
  /** The deposit of the new terms (ON_TRIP: the booking's own, which never changes). */
  depositAmount: number;
  /**
   * Takes what the new terms need and frees what they no longer do, then writes the booking row in place (CAS on
   * its version). `newDepositVersion`: the deposit of a HOLD changed. Returns the booking as it now is.
   */
  apply(newDepositVersion: boolean): Promise<Booking>;
}

const changedUnderLock = (id: number) => new Error(`booking ${id}: its version moved under the row lock`);

/** The row's fields every change writes, as the booking now has them (no need to read it back). */
const rowAfter = (b: Booking, depositAmount: number, totalAmount: number | null, newDepositVersion: boolean) => ({
  version: b.version + 1, depositAmount, totalAmount,
  depositVersion: b.depositVersion + (newDepositVersion ? 1 : 0), paymentIntentId: newDepositVersion ? null : b.paymentIntentId,
});

/**
 * A car: the new car (404; of the booking's currency; a host may move a booking only to a car of their own), the new
 * car's deposit and dailyPrice × started days. Applying is one UPDATE of the row: the exclusion constraint judges the
 * new period (turnaround included) against every other live booking, never against the booking's own old period, so
 * time the old and the new period share is never free, not even for an instant.
 */
export async function prepareCarChange(tx: CommonQueryMethods, actor: Actor, b: CarBooking, after: CarTerms, now: Date): Promise<PreparedChange> {
  checkCarTerms(b.status, after, now);
  const car = await findCar(tx, after.carId);
  if (!car) throw notFound('car');
  if (car.id !== b.carId) {
    if (!sameCurrency(car.currency, b.currency)) throw validation('carId', `the car is priced in ${car.currency}, the booking in ${b.currency}`);
    if (actor.role === 'host' && car.hostId !== actor.id) throw validation('carId', 'a host may move a booking only to a car of their own');
  }
  const depositAmount = b.status === 'ON_TRIP' ? b.depositAmount : car.depositAmount;
  const totalAmount = boundedTotal(car.dailyPrice * carDays(after.from, after.to), 'to', 'the dailyPrice × days');
  return {
    depositAmount,
    async apply(newDepositVersion) {
      const row = { id: b.id, version: b.version, depositAmount, totalAmount, newDepositVersion };
      if (!(await updateCarTerms(tx, { ...row, ...after }))) throw changedUnderLock(b.id);
      return { ...b, ...rowAfter(b, depositAmount, totalAmount, newDepositVersion), ...after, hostId: car.hostId };
    },
  };
}

/**
 * A stay: another room type must be of the same hotel and currency; the rate plan, guests and quote are checked as
 * for a new hold (the quote is the booking's customer's and must match the new terms). Applying locks the nights of
 * the old and the new stay in the hold's order, judges restrictions, rooms and prices of the new stay under those
 * locks (counting the rooms the booking already holds), and moves the counters by the difference only, with a
 * ledger entry (reason `change`) for every night whose counts change.
 */
export async function prepareStayChange(
  tx: CommonQueryMethods,
  actor: Actor,
  b: StayBooking,
  plan: { before: StayTerms; after: StayTerms; quoteId: number | null },
  now: Date,
): Promise<PreparedChange> {
  const { before, after } = plan;
  checkStayTerms(b.status, after, b.hotel.timezone, now);
  const cat = await findStayCatalogue(tx, after.roomTypeId, after.ratePlanId);
  if (!cat) throw notFound('room type');
  if (after.roomTypeId !== before.roomTypeId) {
    const own = await findStayCatalogue(tx, before.roomTypeId, null);
    if (cat.hotelId !== own?.hotelId) throw validation('roomTypeId', 'the new room type must be of the same hotel');
    if (!sameCurrency(cat.currency, b.currency)) throw validation('roomTypeId', `the room type is priced in ${cat.currency}, the booking in ${b.currency}`);
  }
  if (after.ratePlanId !== null) {
    if (cat.ratePlanRoomTypeId === null) throw notFound('rate plan');
    if (cat.ratePlanRoomTypeId !== after.roomTypeId) throw validation('ratePlanId', 'the rate plan belongs to another room type');
  }
  checkGuests(after.guests, after.rooms, cat.maxGuests);
  let quote: { id: number; totalAmount: number } | null = null;
  if (plan.quoteId !== null) {
    if (after.ratePlanId === null) throw validation('ratePlanId', 'a quoteId needs the ratePlanId it was made for');
    const q = await findQuote(tx, plan.quoteId, b.customerId);
    if (!q) throw notFound('quote');
    checkQuoteForHold(q, quoteFingerprint(requestOf(b.customerId, { ...after, ratePlanId: after.ratePlanId })), now);
    quote = { id: q.id, totalAmount: q.totalAmount };
  }
  const depositAmount = b.status === 'ON_TRIP' ? b.depositAmount : stayDeposit(cat.depositAmount, after.rooms);
  return {
    depositAmount,
    async apply(newDepositVersion) {
      const nightCount = nightsBetween(after.checkIn, after.checkOut);
      // Room nights first, then the rate plan FOR SHARE, then its calendar: the order of every stay hold (judgeLocked).
      const nights = await lockNightsOfBoth(tx, before, after);
      let rate = null;
      if (after.ratePlanId !== null) {
        if (!(await findRatePlan(tx, after.ratePlanId, 'share'))) throw notFound('rate plan');
        const calendar = await listCalendar(tx, after.ratePlanId, after.checkIn, nightCount + 1);
        rate = { nights: calendar.slice(0, nightCount), departure: calendar[nightCount]! };
      }
      const price = judgeStay({
        roomNights: freeForChange(before, after, nights), nightCount, rooms: after.rooms, rate, quotedTotal: quote?.totalAmount ?? null,
      });
      const deltas = nightDeltas(before, after);
      if (deltas.length > 0) {
        await attributeChanges(tx, { actor: describeActor(actor), reason: 'change', bookingId: b.id });
        await applyNightDeltas(tx, stayCounter(b.status)!, deltas);
      }
      const totalAmount = price?.totalAmount ?? null;
      const written = await updateStayTerms(tx, {
        id: b.id, version: b.version, depositAmount, totalAmount, newDepositVersion, ...after,
        quoteId: quote?.id ?? null, nightPrices: price?.nights.map((n) => n.price) ?? null,
      });
      if (!written) throw changedUnderLock(b.id);
      return { ...b, ...rowAfter(b, depositAmount, totalAmount, newDepositVersion), ...after };
    },
  };
}
