import { z } from 'zod';
import { guests, id, instant, isoDate, rooms } from './common.js';

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
export const cancelBody = z.object({ reason: z.string().max(500).optional() }).optional();
