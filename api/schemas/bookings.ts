import { z } from 'zod';
import { CLEAN_TEXT, dateOut, fastId, fastInstant, guests, isCleanText, id, instant, instantOut, isObject, isoDate, money, rooms } from './common.js';
import { BOOKING_STATUSES } from '../../shared/domain/booking-status.js';

/** POST /bookings for a car (from in the future, from < to, ≤ 30 days: checked by the hold use case) */
export const carHoldBody = z.object({ carId: id, from: instant, to: instant });
/** carHoldBody's answer without zod (common.ts, "Fast paths"), or null. */
export function fastCarHoldBody(b: unknown): z.infer<typeof carHoldBody> | null {
  if (!isObject(b)) return null;
  const carId = fastId(b.carId);
  const from = fastInstant(b.from);
  const to = fastInstant(b.to);
  return carId === null || from === null || to === null ? null : { carId, from, to };
}
/** POST /bookings for a stay: the body names `roomTypeId` */
export const stayHoldBody = z.object({
  roomTypeId: id, checkIn: isoDate, checkOut: isoDate, rooms, guests, ratePlanId: id.optional(), quoteId: id.optional(),
});
/** Any POST /bookings body is first a JSON object. */
export const holdBodyObject = z.record(z.unknown(), { invalid_type_error: 'a JSON object is required', required_error: 'a JSON object is required' });
/** The Idempotency-Key header of POST /bookings */
export const idempotencyKeyHeader = z.string().min(1, 'given empty: 1 to 255 characters, or no header').max(255).optional();
/** POST /bookings/{id}/cancel */
export const cancelBody = z.object({ reason: z.string().max(500).refine(isCleanText, CLEAN_TEXT).optional() }).optional();

const kind = z.enum(['car', 'stay']);
/** 201 of POST /bookings (and its replays). */
export const holdAnswer = z.object({
  bookingId: id, kind, status: z.literal('HOLD'), holdExpiresAt: instantOut, depositAmount: money,
  totalAmount: money.nullable().describe('Cars: dailyPrice × started days; stays on a rate plan: Σ nightly price × rooms; other stays: null'),
  currency: z.string(), paymentUrl: z.string().url(),
}).strict();
/** GET /bookings/{id}: the other kind's fields are null; holdExpiresAt only in HOLD. */
export const bookingAnswer = z.object({
  bookingId: id, kind, status: z.enum(BOOKING_STATUSES), customerId: id,
  carId: id.nullable(), from: instantOut.nullable(), to: instantOut.nullable(),
  roomTypeId: id.nullable(), checkIn: dateOut.nullable(), checkOut: dateOut.nullable(), rooms: z.number().int().positive().nullable(),
  depositAmount: money, currency: z.string(), holdExpiresAt: instantOut.nullable(),
  guests: z.number().int().positive().nullable(), ratePlanId: id.nullable(), totalAmount: money.nullable(),
  payment: z.object({ status: z.literal('SUCCEEDED'), amount: money }).strict().nullable(),
  refund: z.object({ amount: money, status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']) }).strict().nullable(),
}).strict();
export const cancelAnswer = z.object({ bookingId: id, status: z.literal('CANCELLED'), refundAmount: money, currency: z.string() }).strict();
/**
 * POST /bookings/{id}/change: the fields given replace the booking's (car: from, to, carId; stay: the rest). Strict: a
 * misspelt field is refused, never ignored. Which fields a booking accepts (its kind, its status) is the use case's.
 */
export const changeBody = z.object({
  from: instant.optional(), to: instant.optional(), carId: id.optional(),
  checkIn: isoDate.optional(), checkOut: isoDate.optional(), rooms: rooms.removeDefault().optional(), guests: guests.removeDefault().optional(),
  roomTypeId: id.describe('Another room type of the same hotel').optional(),
  ratePlanId: id.describe('A rate plan of the (new) room type; a new room type without one has none').optional(),
  quoteId: id.describe('A quote of the booking\'s customer for exactly the new stay (needs its ratePlanId)').optional(),
}, { invalid_type_error: 'a JSON object is required', required_error: 'a JSON object is required' }).strict();

const carTermsOut = z.object({ carId: id, from: instantOut, to: instantOut }).strict();
const stayTermsOut = z.object({
  roomTypeId: id, checkIn: dateOut, checkOut: dateOut, rooms: z.number().int().positive(), guests: z.number().int().positive(), ratePlanId: id.nullable(),
}).strict();
/** 200 of POST /bookings/{id}/change (and its replays): the booking as GET shows it, and what changed. */
export const changeAnswer = bookingAnswer.extend({
  change: z.object({
    before: z.union([carTermsOut, stayTermsOut]), after: z.union([carTermsOut, stayTermsOut]),
    depositDelta: z.number().int().describe('New deposit − old; a CONFIRMED booking is refunded a negative delta'),
  }).strict(),
}).strict();
export const tripAnswer = z.object({ bookingId: id, status: z.enum(['ON_TRIP', 'COMPLETED']) }).strict();
