/**
 * The zod schemas of the rate-plan, calendar and quote routes and of the stay hold body, in one place so the
 * OpenAPI document can be generated from them.
 */
import { z } from 'zod';
import { dateOut, guests, id, instantOut, isoDate, rooms, text } from './common.js';
import { MAX_NIGHT_PRICE } from '../../shared/domain/rates.js';

/** Stay length limits are the contract's (1–30 nights); a restriction beyond 366 nights means nothing. */
const stayNights = z.number().int().min(1).max(366);

export const ratePlanBody = z.object({ name: text(200) });

export const calendarQuery = z.object({ from: isoDate, to: isoDate });

/**
 * PUT calendar: unknown fields are refused (a misspelt "stopsell" must not be ignored silently), at least one
 * field must be set, and minStay ≤ maxStay when both are given.
 */
export const calendarBody = z
  .object({
    from: isoDate,
    to: isoDate,
    reason: text(500),
    price: z.number().int().min(0).max(MAX_NIGHT_PRICE).optional(),
    minStay: stayNights.optional(),
    maxStay: stayNights.optional(),
    closedToArrival: z.boolean().optional(),
    closedToDeparture: z.boolean().optional(),
    stopSell: z.boolean().optional(),
  })
  .strict()
  .refine((b) => ['price', 'minStay', 'maxStay', 'closedToArrival', 'closedToDeparture', 'stopSell'].some((f) => f in b), {
    path: ['body'], message: 'set at least one of price, minStay, maxStay, closedToArrival, closedToDeparture, stopSell',
  })
  .refine((b) => b.minStay === undefined || b.maxStay === undefined || b.minStay <= b.maxStay, {
    path: ['maxStay'], message: 'maxStay must not be below minStay',
  });

export const quoteBody = z.object({ roomTypeId: id, ratePlanId: id, checkIn: isoDate, checkOut: isoDate, rooms, guests });

/** Answers, for the OpenAPI document (strict, like every answer schema). */
export const calendarNight = z.object({
  date: dateOut, price: z.number().int().nullable(), minStay: z.number().int(), maxStay: z.number().int(),
  closedToArrival: z.boolean(), closedToDeparture: z.boolean(), stopSell: z.boolean(),
}).strict();
export const calendarAnswer = z.object({ nights: z.array(calendarNight) }).strict();
export const ratePlanAnswer = z.object({ id, roomTypeId: id, name: z.string(), currency: z.string() }).strict();
export const quoteAnswer = z.object({
  quoteId: id, roomTypeId: id, ratePlanId: id, checkIn: dateOut, checkOut: dateOut, rooms: z.number().int(), guests: z.number().int(),
  nights: z.array(z.object({ date: dateOut, price: z.number().int() }).strict()), totalAmount: z.number().int(), depositAmount: z.number().int(),
  currency: z.string(), validUntil: instantOut,
}).strict();
