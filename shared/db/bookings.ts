import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { BOOKING_STATUSES, type BookingStatus } from '../domain/booking-status.js';
import type { Booking } from '../domain/booking.js';
import type { RowEventDraft } from './outbox.js';
import type { PreparedDb } from './prepared.js';
import { claimLease, leaseState, LEASED, releaseLease, type Lease } from './leases.js';

const instant = z.string().transform((s) => new Date(s));
const common = {
  id: z.number(),
  status: z.enum(BOOKING_STATUSES),
  version: z.number(),
  customerId: z.number(),
  depositAmount: z.number(),
  totalAmount: z.number().nullable(),
  currency: z.string(),
  holdExpiresAt: instant.nullable(),
  nextExpiryCheckAt: instant.nullable(),
  payRequestedAt: instant.nullable(),
  paymentIntentId: z.string().nullable(),
  depositVersion: z.number(),
  jobGen: z.number(),
};
// The table's CHECKs guarantee each kind's columns; the other kind's (null) columns are dropped.
const carRow = z.object({ kind: z.literal('car'), ...common, carId: z.number(), hostId: z.number(), from: instant, to: instant });
const stayRow = z.object({
  kind: z.literal('stay'), ...common, roomTypeId: z.number(), checkIn: z.string(), checkOut: z.string(), rooms: z.number(),
  guests: z.number(), ratePlanId: z.number().nullable(), hotelTimezone: z.string(), hotelCheckInTime: z.string(),
});

/** A booking row as read (car, room type and hotel joined), parsed into the domain's Booking. */
export const bookingRow = z.discriminatedUnion('kind', [carRow, stayRow]).transform((r): Booking => {
  if (r.kind === 'car') return r;
  const { hotelTimezone, hotelCheckInTime, ...stay } = r;
  return { ...stay, hotel: { timezone: hotelTimezone, checkInTime: hotelCheckInTime } };
});

const select = sql.fragment`
  SELECT b.id, b.kind, b.status, b.version, b.customer_id AS "customerId", b.car_id AS "carId", c.host_id AS "hostId",
    lower(b.period) AS "from", upper(b.period) AS "to",
    b.room_type_id AS "roomTypeId", b.check_in::text AS "checkIn", b.check_out::text AS "checkOut", b.rooms,
    b.guests, b.rate_plan_id AS "ratePlanId", b.total_amount AS "totalAmount",
    b.deposit_amount AS "depositAmount", b.currency, b.hold_expires_at AS "holdExpiresAt",
    b.next_expiry_check_at AS "nextExpiryCheckAt", b.pay_requested_at AS "payRequestedAt",
    b.payment_intent_id AS "paymentIntentId", b.deposit_version AS "depositVersion", b.job_gen AS "jobGen", h.timezone AS "hotelTimezone", h.check_in_time::text AS "hotelCheckInTime"
  FROM booking b
  LEFT JOIN car c ON c.id = b.car_id
  LEFT JOIN room_type rt ON rt.id = b.room_type_id
  LEFT JOIN hotel h ON h.id = rt.hotel_id`;

const lockedId = z.object({ id: z.number() });

/**
 * The booking; `forUpdate`: its row locked first, then read by a second statement. One statement (`… JOIN car, room
 * type, hotel … FOR UPDATE OF b`) is not enough once a booking can move to another car or room type: after waiting
 * for the writer that changed the row, PostgreSQL re-checks only the booking's new version against the joined rows it
 * had already read (EvalPlanQual), so a booking a change moved came back with no host or hotel. The second statement
 * takes a new snapshot, which has every commit made before the lock was granted.
 */
export async function findBooking(db: CommonQueryMethods, id: number, opts: { forUpdate?: boolean } = {}): Promise<Booking | null> {
  if (opts.forUpdate && (await db.maybeOneFirst(sql.type(lockedId)`SELECT id FROM booking WHERE id = ${id} FOR UPDATE`)) === null) return null;
  return db.maybeOne(sql.type(bookingRow)`${select} WHERE b.id = ${id}`);
}

export interface NewCarHold {
  customerId: number;
  carId: number;
  from: Date;
  to: Date;
  /** Started days of [from, to): the total is the car's dailyPrice times this. */
  days: number;
  holdExpiresAt: Date;
}

export const insertedHold = z.object({ id: z.number(), depositAmount: z.number(), totalAmount: z.number(), currency: z.string() });

/**
 * Inserts the hold with the car's deposit; null when the car does not exist. The exclusion constraint,
 * not a prior read, decides whether the car is free.
 */
export async function insertCarHold(db: CommonQueryMethods, h: NewCarHold): Promise<z.infer<typeof insertedHold> | null> {
  return db.maybeOne(sql.type(insertedHold)`
    INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
    SELECT 'car', 'HOLD', ${h.customerId}, c.id,
           tstzrange(${h.from.toISOString()}::timestamptz, ${h.to.toISOString()}::timestamptz, '[)'),
           c.deposit_amount, c.daily_price * ${h.days}, c.currency, ${h.holdExpiresAt.toISOString()}, ${h.holdExpiresAt.toISOString()}
    FROM car c WHERE c.id = ${h.carId}
    RETURNING id, deposit_amount AS "depositAmount", total_amount AS "totalAmount", currency`);
}

/** What writing a car hold came to: the booking's row, or why there is none. */
export type CarHoldOutcome =
  | { kind: 'held'; row: InsertedHold }
  /** The exclusion constraint refused it: the car is booked for an overlapping period (turnaround included). */
  | { kind: 'taken' }
  | { kind: 'noCar' }
  /** The car's dailyPrice × days is beyond booking_total_bound (MAX_MONEY). */
  | { kind: 'overBound' };

export type InsertedHold = z.infer<typeof insertedHold>;

/** A car hold to write with its booking.held event (the draft lacks what the INSERT decides). */
export interface CarHoldWrite {
  hold: NewCarHold;
  held: RowEventDraft;
}

/**
 * The hold and its booking.held event in one statement (one round trip, no explicit transaction), prepared: the
 * hottest write there is. The event gets the new booking's id (its message key too), deposit, total and currency
 * from the inserted row, so it is exactly what insertCarHold + writeEvent write. As in insertCarHold, the
 * exclusion constraint decides (SQLSTATE 23P01); a refused hold writes no event either.
 */
export async function insertCarHoldWithEvent(db: PreparedDb, { hold: h, held }: CarHoldWrite): Promise<CarHoldOutcome> {
  let rows: InsertedHold[];
  try {
    rows = await db.query<InsertedHold>('insert-car-hold-with-event', `
    WITH b AS (
      INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
      SELECT 'car', 'HOLD', $1, c.id, tstzrange($2::timestamptz, $3::timestamptz, '[)'), c.deposit_amount, c.daily_price * $9::int8,
             c.currency, $4::timestamptz, $4::timestamptz
      FROM car c WHERE c.id = $5
      RETURNING id, deposit_amount, total_amount, currency
    ), e AS (
      INSERT INTO outbox (event_id, topic, message_key, payload, request_id, traceparent)
      SELECT $6::uuid, $7, b.id::text,
             $8::jsonb || jsonb_build_object('bookingId', b.id, 'depositAmount', b.deposit_amount, 'totalAmount', b.total_amount, 'currency', b.currency),
             $10, $11
      FROM b
    )
    SELECT id, deposit_amount AS "depositAmount", total_amount AS "totalAmount", currency FROM b`,
    [
      h.customerId, h.from.toISOString(), h.to.toISOString(), h.holdExpiresAt.toISOString(), h.carId, held.eventId, held.topic,
      JSON.stringify(held.payload), h.days, held.requestId, held.traceparent,
    ]);
  } catch (e) {
    const pgError = e as { code?: string; constraint?: string };
    if (pgError.code === '23P01') return { kind: 'taken' };
    // The total is computed in the INSERT from the car's price (no read before it): migration 018's CHECK refuses one beyond MAX_MONEY.
    if (pgError.code === '23514' && pgError.constraint === 'booking_total_bound') return { kind: 'overBound' };
    throw e;
  }
  return rows[0] ? { kind: 'held', row: insertedHold.parse(rows[0]) } : { kind: 'noCar' };
}

export interface NewStayHold {
  customerId: number;
  roomTypeId: number;
  checkIn: string;
  checkOut: string;
  rooms: number;
  guests: number;
  depositAmount: number;
  currency: string;
  holdExpiresAt: Date;
  /** On a rate plan: the total and the per-room price of each night it was sold at; else all null. */
  ratePlanId: number | null;
  quoteId: number | null;
  totalAmount: number | null;
  nightPrices: number[] | null;
}

export async function insertStayHold(db: CommonQueryMethods, h: NewStayHold): Promise<number> {
  return db.oneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO booking (kind, status, customer_id, room_type_id, check_in, check_out, rooms, guests, deposit_amount, currency,
                         hold_expires_at, next_expiry_check_at, rate_plan_id, quote_id, total_amount, night_prices)
    VALUES ('stay', 'HOLD', ${h.customerId}, ${h.roomTypeId}, ${h.checkIn}::date, ${h.checkOut}::date, ${h.rooms}, ${h.guests},
            ${h.depositAmount}, ${h.currency}, ${h.holdExpiresAt.toISOString()}, ${h.holdExpiresAt.toISOString()},
            ${h.ratePlanId}::bigint, ${h.quoteId}::bigint, ${h.totalAmount}::bigint,
            ${h.nightPrices === null ? null : sql.array(h.nightPrices, 'int8')})
    RETURNING id`);
}

/**
 * Compare-and-set on the booking's version: succeeds for exactly one of any racing writers.
 * Returns false when someone else changed the booking first.
 */
export async function transition(
  db: CommonQueryMethods,
  b: { id: number; version: number },
  to: BookingStatus,
): Promise<boolean> {
  const holdFields = to === 'HOLD' ? sql.fragment`` : sql.fragment`, hold_expires_at = NULL, next_expiry_check_at = NULL, lease_until = NULL, lease_token = NULL`;
  const r = await db.query(sql.typeAlias('void')`
    UPDATE booking SET status = ${to}, version = version + 1, updated_at = now() ${holdFields}
    WHERE id = ${b.id} AND version = ${b.version}`);
  return r.rowCount === 1;
}

const depositRow = z.object({ status: z.string(), depositVersion: z.number() });

/**
 * The booking's status and deposit version, its row share-locked until the caller's transaction ends: a move out of
 * HOLD or a change of the deposit that has not committed yet waits for that transaction, one that has is what this
 * reads. Null when there is no such booking.
 */
export async function lockDepositOf(db: CommonQueryMethods, id: number) {
  return db.maybeOne(sql.type(depositRow)`
    SELECT status, deposit_version AS "depositVersion" FROM booking WHERE id = ${id} FOR SHARE`);
}

/** Notes that a payment may be in flight; false when the booking is no longer a HOLD. */
export async function markPayRequested(db: CommonQueryMethods, id: number, at: Date): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE booking SET pay_requested_at = coalesce(pay_requested_at, ${at.toISOString()}::timestamptz)
    WHERE id = ${id} AND status = 'HOLD'`);
  return r.rowCount === 1;
}

/**
 * Saves the intent /pay created for the deposit of `depositVersion`; false when a change has replaced that deposit
 * meanwhile (the intent is then superseded: the caller records it so).
 */
export async function savePaymentIntent(db: CommonQueryMethods, id: number, intentId: string, depositVersion: number): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE booking SET payment_intent_id = coalesce(payment_intent_id, ${intentId})
    WHERE id = ${id} AND deposit_version = ${depositVersion}`);
  return r.rowCount === 1;
}

/** A payment check's claim on a HOLD past holdExpiresAt (shared/db/leases.ts); null when not claimable now. */
export const claimPaymentCheck = (db: CommonQueryMethods, id: number, gen: number, leaseMs: number): Promise<Lease | null> =>
  claimLease(db, LEASED.booking, [id], gen, leaseMs);
export const paymentCheckLeaseState = (db: CommonQueryMethods, id: number) => leaseState(db, LEASED.booking, [id]);
/** The hold is kept (a payment may be in flight): checked again `retryInMs` from now. */
export const releasePaymentCheck = (db: CommonQueryMethods, id: number, token: string, retryInMs: number): Promise<boolean> =>
  releaseLease(db, LEASED.booking, [id], token, { retryInMs });

/** Sets when a HOLD's expiry is next looked at (its job's delay says the same). */
export async function deferExpiryCheck(db: CommonQueryMethods, id: number, at: Date): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE booking SET next_expiry_check_at = ${at.toISOString()}::timestamptz WHERE id = ${id} AND status = 'HOLD'`);
}

/**
 * Locks the unpaid HOLDs (nobody asked to pay) whose expiry is overdue by more than `graceMs`, passing over rows
 * another transaction holds (SKIP LOCKED: their expiry job is deciding them right now). The expiry reconciler
 * expires these itself when their job is late (a dead worker, Redis unreachable), to keep the 1 s promise.
 */
export async function lockOverdueUnpaidHolds(db: CommonQueryMethods, now: Date, graceMs: number, limit: number): Promise<readonly Booking[]> {
  // Locked, then read by a second statement, as in findBooking (a change may have moved the hold meanwhile).
  const ids = await db.anyFirst(sql.type(lockedId)`
    SELECT id FROM booking WHERE status = 'HOLD' AND pay_requested_at IS NULL
      AND next_expiry_check_at < ${now.toISOString()}::timestamptz - make_interval(secs => ${graceMs / 1000})
    ORDER BY next_expiry_check_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`);
  if (ids.length === 0) return [];
  return db.any(sql.type(bookingRow)`${select} WHERE b.id = ANY(${sql.array(ids, 'int8')}) ORDER BY b.next_expiry_check_at`);
}

const bookingMoney = z.object({
  paymentAmount: z.number().nullable(),
  refundAmount: z.number().nullable(),
  refundStatus: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']).nullable(),
});

/** The payment that confirmed the booking (else the latest success) and the latest refund. */
export async function moneyOf(db: CommonQueryMethods, bookingId: number) {
  return db.one(sql.type(bookingMoney)`
    SELECT p.amount AS "paymentAmount", r.amount AS "refundAmount", r.status AS "refundStatus"
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (SELECT amount FROM payment WHERE booking_id = ${bookingId}
                       ORDER BY (outcome = 'CONFIRMED') DESC, id DESC LIMIT 1) p ON true
    LEFT JOIN LATERAL (SELECT amount, status FROM refund WHERE booking_id = ${bookingId}
                       ORDER BY id DESC LIMIT 1) r ON true`);
}
