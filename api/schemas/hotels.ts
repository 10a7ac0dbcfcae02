import { z } from 'zod';
import { currency, dateOut, deposit, fastIsoDate, fastQueryInt, fastText, id, isObject, isoDate, money, queryInt, text } from './common.js';

/** POST /hotels */
export const createHotelBody = z.object({
  name: text(200),
  city: text(50),
  timezone: text(64),
  checkInTime: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM').default('14:00'),
});

/** POST /hotels/{hotelId}/room-types */
export const createRoomTypeBody = z.object({
  name: text(200), depositAmount: deposit, currency: currency.default('VND'), maxGuests: z.number().int().min(1).max(100).default(2),
});

/** GET /room-types/{roomTypeId}/inventory and …/audit: nights [from, to) */
export const nightRangeQuery = z.object({ from: isoDate, to: isoDate });

/** GET …/audit: a page of the nights' ledger, oldest first; `cursor` is a previous page's `nextCursor`. */
export const auditQuery = nightRangeQuery.extend({
  limit: queryInt(1000, 1, 5000),
  cursor: z.string().min(1).max(20_000).optional().describe("The previous page's nextCursor, as it came"),
});

/** PUT /room-types/{roomTypeId}/inventory */
export const adjustInventoryBody = nightRangeQuery.extend({ sellable: z.number().int().min(0).max(100_000), reason: text(500) });

/** GET /hotels/availability (the 1–30 nights are checked by the search use case) */
export const availabilityQuery = z.object({ city: text(50), checkIn: isoDate, checkOut: isoDate, rooms: queryInt(1, 1, 100) });
/** availabilityQuery's answer without zod (common.ts, "Fast paths"), or null. */
export function fastAvailabilityQuery(q: unknown): z.infer<typeof availabilityQuery> | null {
  if (!isObject(q)) return null;
  const city = fastText(q.city, 50);
  const checkIn = fastIsoDate(q.checkIn);
  const checkOut = fastIsoDate(q.checkOut);
  const rooms = fastQueryInt(q.rooms, 1, 1, 100);
  return city === null || checkIn === null || checkOut === null || rooms === null ? null : { city, checkIn, checkOut, rooms };
}

export const hotelAnswer = z.object({ id, name: z.string(), city: z.string(), timezone: z.string(), checkInTime: z.string() }).strict();
export const roomTypeAnswer = z.object({ id, hotelId: id, name: z.string(), depositAmount: money, currency: z.string(), maxGuests: z.number().int() }).strict();
const count = z.number().int().nonnegative();
/** Inventory of each night of the range: available = sellable − held − confirmed. */
export const nightsAnswer = z.object({
  nights: z.array(z.object({ date: dateOut, sellable: count, held: count, confirmed: count, available: z.number().int() }).strict()),
}).strict();
const counts = z.object({ sellable: count, held: count, confirmed: count }).strict();
/** Every count change of the range's nights, oldest first, a page at a time. */
export const auditAnswer = z.object({
  entries: z.array(z.object({
    at: z.string(), date: dateOut, actor: z.string(), reason: z.string(), bookingId: id.nullable(), before: counts, after: counts,
  }).strict()),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
}).strict();
/** Room types with at least `rooms` free on every night; `available` is the minimum over the nights. */
export const availabilityAnswer = z.object({
  roomTypes: z.array(z.object({
    roomTypeId: id, hotelId: id, hotelName: z.string(), name: z.string(), available: count, depositAmount: money, currency: z.string(),
  }).strict()),
}).strict();
