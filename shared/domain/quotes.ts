import { DomainError, validation } from './errors.js';

/** What a quote was asked for, defaults applied; a hold with the quote must ask for exactly this. */
export interface StayRequest {
  customerId: number;
  roomTypeId: number;
  ratePlanId: number;
  checkIn: string;
  checkOut: string;
  rooms: number;
  guests: number;
}

/** The request's fields in a fixed order: equal exactly when every field is equal (hashed into the quote's fingerprint). */
export const canonicalRequest = (r: StayRequest): string =>
  JSON.stringify([r.customerId, r.roomTypeId, r.ratePlanId, r.checkIn, r.checkOut, r.rooms, r.guests]);

export interface StoredQuote {
  id: number;
  customerId: number;
  fingerprint: string;
  totalAmount: number;
  validUntil: string;
}

/**
 * The checks a hold makes of its quote before anything is locked: the caller found it by id and the customer
 * (another customer's quote is NOT_FOUND before this); it must match the body (the fingerprint of the hold's
 * request) and not be past validUntil.
 * Whether its total is still the price is decided under the hold's locks.
 */
export function checkQuoteForHold(q: StoredQuote, requestFingerprint: string, now: Date): void {
  if (q.fingerprint !== requestFingerprint) {
    throw validation('quoteId', 'the quote was made for another stay (room type, rate plan, dates, rooms or guests differ)');
  }
  if (now.getTime() > Date.parse(q.validUntil)) {
    throw new DomainError('QUOTE_EXPIRED', 'the quote is past its validUntil', { validUntil: q.validUntil });
  }
}

/** Guests fit the rooms: at most maxGuests per room. */
export function checkGuests(guests: number, rooms: number, maxGuests: number): void {
  if (guests > maxGuests * rooms) {
    throw validation('guests', `at most ${maxGuests} guests per room (${maxGuests * rooms} for ${rooms} room(s))`);
  }
}
