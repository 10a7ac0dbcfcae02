import { z } from 'zod';
import { CLEAN_TEXT, dateOut, guests, isCleanText, id, instant, instantOut, isoDate, money, rooms } from './common.js';
import { BOOKING_STATUSES } from '../../shared/domain/booking-status.js';

/** POST /bookings for a car (from in the future, from < to, ≤ 30 days: checked by the hold use case) */
export const carHoldBody = z.object({ carId: id, from: instant, to: instant });
/** POST /bookings for a stay: the body names `roomTypeId` */
export const stayHoldBody = z.object({
  roomTypeId: id, checkIn: isoDate, checkOut: isoDate, rooms, guests, ratePlanId: id.optional(), quoteId: id.optional(),
});
/** Any POST /bookings body is first a JSON object. */
export const holdBodyObject = z.record(z.unknown(), { invalid_type_error: 'a JSON object is required', required_error: 'a JSON object is required' });
/** The Idempotency-Key header of POST /bookings */
export const idempotencyKeyHeader = z.string().min(1).max(255).optional();
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
export const tripAnswer = z.object({ bookingId: id, status: z.enum(['ON_TRIP', 'COMPLETED']) }).strict();
