import { z } from 'zod';
import { MAX_MONEY } from '../domain/money.js';
import { isStatementError, type PreparedDb } from './prepared.js';
import { insertedHold, type CarHoldOutcome, type CarHoldWrite } from './bookings.js';

// The batched form of insertCarHoldWithEvent (bookings.ts): the booking aggregate's one multi-row write.

const batchOutcome = z.object({
  carFound: z.boolean(),
  withinBound: z.boolean(),
  id: z.number().nullable(),
  depositAmount: z.number().nullable(),
  totalAmount: z.number().nullable(),
  currency: z.string().nullable(),
});

/**
 * Several car holds and their booking.held events in one statement: what insertCarHoldWithEvent does for each,
 * with one round trip, one plan and one commit for all. One outcome per hold, in input order. The cars must be
 * distinct (the events are joined to their bookings by car). Null when the server refused the statement (a
 * SQLSTATE: an overflow, a trigger's error, a deadlock it broke): it wrote nothing, and each hold may be tried alone.
 *
 * - Each hold reads its car by key (LATERAL … OFFSET 0 keeps the planner from a join over the whole car table,
 *   whatever the statistics say: autovacuum may be off).
 * - A hold whose total would break booking_total_bound is left out before the INSERT (the CHECK would fail the
 *   whole statement), and reported overBound; it is the same bound as the CHECK's.
 * - `ON CONFLICT DO NOTHING` makes the exclusion constraint skip a hold whose car is taken instead of failing the
 *   statement: it waits for an uncommitted overlapping writer exactly as a plain INSERT does, and skips the row if
 *   that writer commits. The rows go in car order, so two batches wait for each other's cars in one order only.
 */
export async function insertCarHoldsWithEvents(db: PreparedDb, holds: readonly CarHoldWrite[]): Promise<CarHoldOutcome[] | null> {
  if (new Set(holds.map((w) => w.hold.carId)).size !== holds.length) throw new Error('insertCarHoldsWithEvents: a car appears twice in one batch');
  const rows = await db.query<unknown>('insert-car-holds-with-events', `
    WITH i AS (
      SELECT * FROM unnest($1::int8[], $2::int8[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[], $6::int8[], $7::uuid[],
                           $8::text[], $9::text[], $10::text[], $11::text[]) WITH ORDINALITY
        AS i(customer_id, car_id, from_at, to_at, expires_at, days, event_id, topic, payload, request_id, traceparent, ord)
    ), p AS (
      SELECT i.*, c.id AS found, c.deposit_amount, c.daily_price * i.days AS total, c.currency
      FROM i LEFT JOIN LATERAL (SELECT id, deposit_amount, daily_price, currency FROM car WHERE car.id = i.car_id OFFSET 0) c ON true
    ), b AS (
      INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
      SELECT 'car', 'HOLD', p.customer_id, p.car_id, tstzrange(p.from_at, p.to_at, '[)'), p.deposit_amount, p.total, p.currency,
             p.expires_at, p.expires_at
      FROM p WHERE p.found IS NOT NULL AND p.total <= $12::int8
      ORDER BY p.car_id
      ON CONFLICT DO NOTHING
      RETURNING id, car_id, deposit_amount, total_amount, currency
    ), e AS (
      INSERT INTO outbox (event_id, topic, message_key, payload, request_id, traceparent)
      SELECT p.event_id, p.topic, b.id::text,
             p.payload::jsonb || jsonb_build_object('bookingId', b.id, 'depositAmount', b.deposit_amount, 'totalAmount', b.total_amount, 'currency', b.currency),
             p.request_id, p.traceparent
      FROM b JOIN p ON p.car_id = b.car_id
    )
    SELECT p.found IS NOT NULL AS "carFound", coalesce(p.total <= $12::int8, false) AS "withinBound",
           b.id, b.deposit_amount AS "depositAmount", b.total_amount AS "totalAmount", b.currency
    FROM p LEFT JOIN b ON b.car_id = p.car_id
    ORDER BY p.ord`,
  [
    holds.map((w) => w.hold.customerId), holds.map((w) => w.hold.carId), holds.map((w) => w.hold.from.toISOString()),
    holds.map((w) => w.hold.to.toISOString()), holds.map((w) => w.hold.holdExpiresAt.toISOString()), holds.map((w) => w.hold.days),
    holds.map((w) => w.held.eventId), holds.map((w) => w.held.topic), holds.map((w) => JSON.stringify(w.held.payload)),
    holds.map((w) => w.held.requestId), holds.map((w) => w.held.traceparent), MAX_MONEY,
  ]).catch((e: unknown) => (isStatementError(e) ? null : Promise.reject(e)));
  if (rows === null) return null;
  if (rows.length !== holds.length) throw new Error(`insertCarHoldsWithEvents: ${holds.length} holds, ${rows.length} outcomes`);
  return rows.map((raw): CarHoldOutcome => {
    const r = batchOutcome.parse(raw);
    if (!r.carFound) return { kind: 'noCar' };
    if (!r.withinBound) return { kind: 'overBound' };
    if (r.id === null) return { kind: 'taken' };
    return { kind: 'held', row: insertedHold.parse({ id: r.id, depositAmount: r.depositAmount, totalAmount: r.totalAmount, currency: r.currency }) };
  });
}
