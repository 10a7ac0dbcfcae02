import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { forbidden, notFound } from '../domain/errors.js';
import { datesFrom } from '../domain/hotel-dates.js';
import type { StayRequest } from '../domain/quotes.js';
import { findQuote, purgeQuotes, type QuoteRow } from '../db/quotes.js';
import { insertQuoteShared, readStayShared } from './stay-batches.js';
import { checkStay, judge, quoteFingerprint, requestOf, type StayInput } from './stay-pricing.js';
import { checkStayDates, stayDeposit } from '../domain/booking.js';
import { nightsBetween } from '../domain/nights.js';

/** The contract's quote answer: the request it was made for (customer aside), the breakdown and the totals. */
export interface QuoteView extends Omit<StayRequest, 'customerId'> {
  quoteId: number;
  nights: { date: string; price: number }[];
  totalAmount: number;
  depositAmount: number;
  currency: string;
  validUntil: string;
}

const view = (q: QuoteRow): QuoteView => {
  const dates = datesFrom(q.checkIn, q.nightPrices.length);
  return {
    quoteId: q.id, roomTypeId: q.roomTypeId, ratePlanId: q.ratePlanId, checkIn: q.checkIn, checkOut: q.checkOut,
    rooms: q.rooms, guests: q.guests, nights: q.nightPrices.map((price, i) => ({ date: dates[i]!, price })),
    totalAmount: q.totalAmount, depositAmount: q.depositAmount, currency: q.currency, validUntil: q.validUntil,
  };
};

/**
 * Prices the stay now and stores the quote: the customer, the request's fingerprint, the nightly prices and
 * totals, and validUntil = now + QUOTE_TTL_S. Refused as a hold would be right now (restrictions, then
 * availability); it reserves nothing.
 */
export async function createQuote(deps: Deps, actor: Actor, input: StayInput & { ratePlanId: number }): Promise<QuoteView> {
  if (actor.role !== 'customer') throw forbidden();
  checkStayDates(input.checkIn, input.checkOut);
  // One statement reads the catalogue entry and the nights (a quote's cost is mostly round trips, so quotes arriving
  // together share each of its two statements: stay-batches.ts).
  const read = await readStayShared(deps.prepared, { ...input, nightCount: nightsBetween(input.checkIn, input.checkOut) });
  const stay = checkStay(actor, input, read?.catalogue ?? null, deps.clock.now());
  const price = judge(stay, read!.nights)!;
  const validUntil = new Date(deps.clock.now().getTime() + deps.config.QUOTE_TTL_S * 1000).toISOString();
  const row: Omit<QuoteRow, 'id'> = {
    customerId: actor.id, fingerprint: quoteFingerprint(requestOf(actor.id, input)),
    roomTypeId: stay.roomTypeId, ratePlanId: input.ratePlanId, checkIn: stay.checkIn, checkOut: stay.checkOut,
    rooms: stay.rooms, guests: stay.guests, nightPrices: price.nights.map((n) => n.price), totalAmount: price.totalAmount,
    depositAmount: stayDeposit(stay.depositPerRoom, stay.rooms), currency: stay.currency, validUntil,
  };
  return view({ ...row, id: await insertQuoteShared(deps.prepared, row) });
}

/** A quote is visible only to its customer; anyone else gets 404, as for an unknown id. */
export async function getQuote(deps: Deps, actor: Actor, id: number): Promise<QuoteView> {
  const q = actor.role === 'customer' ? await findQuote(deps.db, id, actor.id) : null;
  if (!q) throw notFound('quote');
  return view(q);
}

/** A hold arriving this long after its quote's validUntil still hears QUOTE_EXPIRED; later ones hear NOT_FOUND. */
export const KEEP_EXPIRED_QUOTES_HOURS = 24;

/** Run by the quote-purge schedule (maintenance queue). */
export const purgeExpiredQuotes = (deps: Pick<Deps, 'db'>): Promise<number> => purgeQuotes(deps.db, KEEP_EXPIRED_QUOTES_HOURS);
