import { z } from 'zod';
import { currency, isoDate, money, queryInt, text } from './common.js';

/** POST /hotels */
export const createHotelBody = z.object({
  name: text(200),
  city: text(50),
  timezone: text(64),
  checkInTime: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM').default('14:00'),
});

/** POST /hotels/{hotelId}/room-types */
export const createRoomTypeBody = z.object({
  name: text(200), depositAmount: money, currency: currency.default('VND'), maxGuests: z.number().int().min(1).max(100).default(2),
});

/** GET /room-types/{roomTypeId}/inventory and …/audit: nights [from, to) */
export const nightRangeQuery = z.object({ from: isoDate, to: isoDate });

/** PUT /room-types/{roomTypeId}/inventory */
export const adjustInventoryBody = nightRangeQuery.extend({ sellable: z.number().int().min(0).max(100_000), reason: text(500) });

/** GET /hotels/availability (the 1–30 nights are checked by the search use case) */
export const availabilityQuery = z.object({ city: text(50), checkIn: isoDate, checkOut: isoDate, rooms: queryInt(1, 1, 100) });
