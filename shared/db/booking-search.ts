import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { BOOKING_STATUSES } from '../domain/booking-status.js';

// The operator page's search: bookings by id, customer or car (id or plate), newest first.
// By customer it reads booking_customer_idx; by car it walks the primary key backwards (no index on car_id: one on
// the hold's hot path would cost every hold), which an operator's rare search can afford.

const found = z.object({
  id: z.number(),
  kind: z.enum(['car', 'stay']),
  status: z.enum(BOOKING_STATUSES),
  customerId: z.number(),
  carId: z.number().nullable(),
  plate: z.string().nullable(),
  roomTypeId: z.number().nullable(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  checkIn: z.string().nullable(),
  checkOut: z.string().nullable(),
  depositAmount: z.number(),
  currency: z.string(),
  createdAt: z.string(),
});
export type FoundBooking = z.infer<typeof found>;

export type BookingSearch = { bookingId: number } | { customerId: number } | { carId: number } | { plate: string };

export async function searchBookings(db: CommonQueryMethods, q: BookingSearch, limit: number): Promise<readonly FoundBooking[]> {
  const where = 'bookingId' in q ? sql.fragment`b.id = ${q.bookingId}`
    : 'customerId' in q ? sql.fragment`b.customer_id = ${q.customerId}`
      : 'carId' in q ? sql.fragment`b.car_id = ${q.carId}`
        : sql.fragment`b.car_id = (SELECT id FROM car WHERE plate = ${q.plate})`;
  return db.any(sql.type(found)`
    SELECT b.id, b.kind, b.status, b.customer_id AS "customerId", b.car_id AS "carId", c.plate, b.room_type_id AS "roomTypeId",
      lower(b.period) AS "from", upper(b.period) AS "to", b.check_in::text AS "checkIn", b.check_out::text AS "checkOut",
      b.deposit_amount AS "depositAmount", b.currency, b.created_at AS "createdAt"
    FROM booking b LEFT JOIN car c ON c.id = b.car_id
    WHERE ${where}
    ORDER BY b.id DESC LIMIT ${limit}`);
}
