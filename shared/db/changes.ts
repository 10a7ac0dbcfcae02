import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import type { NightDelta } from '../domain/changes.js';

// The SQL of changing a booking (shared/usecases/changes.ts): the booking row updated in place, a stay's room
// nights locked and moved by the difference, and the payment intents a deposit change supersedes (migration 019).

const lockedNight = z.object({ roomTypeId: z.number(), date: z.string(), available: z.number() });

/**
 * Locks the nights of both stays (before and after the change: one room type or two), FOR UPDATE, in (room type,
 * night) order: holds lock one room type's nights in date order, so every writer takes them in one global order and
 * none can deadlock with another (the caller already holds the booking's row, as every status change does).
 */
export async function lockNightsOfBoth(
  db: CommonQueryMethods,
  a: { roomTypeId: number; checkIn: string; checkOut: string },
  b: { roomTypeId: number; checkIn: string; checkOut: string },
): Promise<readonly z.infer<typeof lockedNight>[]> {
  return db.any(sql.type(lockedNight)`
    SELECT room_type_id AS "roomTypeId", night::text AS date, sellable - held - confirmed AS available
    FROM room_night
    WHERE (room_type_id = ${a.roomTypeId} AND night >= ${a.checkIn}::date AND night < ${a.checkOut}::date)
       OR (room_type_id = ${b.roomTypeId} AND night >= ${b.checkIn}::date AND night < ${b.checkOut}::date)
    ORDER BY room_type_id, night
    FOR UPDATE`);
}

/**
 * Moves the rooms of `column` (held for a HOLD, confirmed for CONFIRMED / ON_TRIP) by each night's delta, in one
 * statement over nights the caller has locked. The room_night CHECKs are the backstop against overselling; the
 * ledger trigger writes one entry per night whose counts change.
 */
export async function applyNightDeltas(db: CommonQueryMethods, column: 'held' | 'confirmed', deltas: readonly NightDelta[]): Promise<number> {
  if (deltas.length === 0) return 0;
  const col = sql.identifier([column]);
  const r = await db.query(sql.typeAlias('void')`
    UPDATE room_night n SET ${col} = n.${col} + d.delta
    FROM unnest(${sql.array(deltas.map((d) => d.roomTypeId), 'int8')}, ${sql.array(deltas.map((d) => d.night), 'date')},
                ${sql.array(deltas.map((d) => d.delta), 'int4')}) AS d (room_type_id, night, delta)
    WHERE n.room_type_id = d.room_type_id AND n.night = d.night`);
  return r.rowCount;
}

/** What every change writes on the booking row, besides its terms. */
interface RowUpdate {
  id: number;
  /** The version read under the row lock (compare-and-set, as every transition). */
  version: number;
  depositAmount: number;
  totalAmount: number | null;
  /** The deposit of a HOLD changed: a new deposit version, and the current intent is no longer the booking's. */
  newDepositVersion: boolean;
}

const common = (u: RowUpdate) => sql.fragment`
  deposit_amount = ${u.depositAmount}, total_amount = ${u.totalAmount}::bigint, version = version + 1, updated_at = now(),
  deposit_version = deposit_version + ${u.newDepositVersion ? 1 : 0},
  payment_intent_id = CASE WHEN ${u.newDepositVersion} THEN NULL ELSE payment_intent_id END`;

/**
 * The car booking's period and car, in place (one row): the exclusion constraint judges the new [from, to +
 * turnaround) against every other live booking and never against this one's old period (SQLSTATE 23P01 refuses it).
 */
export async function updateCarTerms(db: CommonQueryMethods, u: RowUpdate & { carId: number; from: Date; to: Date }): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE booking SET car_id = ${u.carId},
      period = tstzrange(${u.from.toISOString()}::timestamptz, ${u.to.toISOString()}::timestamptz, '[)'), ${common(u)}
    WHERE id = ${u.id} AND version = ${u.version}`);
  return r.rowCount === 1;
}

/** The stay's terms and prices in place; `nightPrices` per room of each night when on a rate plan, else null. */
export async function updateStayTerms(
  db: CommonQueryMethods,
  u: RowUpdate & {
    roomTypeId: number; checkIn: string; checkOut: string; rooms: number; guests: number; ratePlanId: number | null;
    quoteId: number | null; nightPrices: number[] | null;
  },
): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE booking SET room_type_id = ${u.roomTypeId}, check_in = ${u.checkIn}::date, check_out = ${u.checkOut}::date, rooms = ${u.rooms},
      guests = ${u.guests}, rate_plan_id = ${u.ratePlanId}::bigint, quote_id = ${u.quoteId}::bigint,
      night_prices = ${u.nightPrices === null ? null : sql.array(u.nightPrices, 'int8')}, ${common(u)}
    WHERE id = ${u.id} AND version = ${u.version}`);
  return r.rowCount === 1;
}

/**
 * Records the booking's current intent (if it saved one) as superseded, in the transaction that changes its deposit
 * (before updateCarTerms / updateStayTerms clear it).
 */
export async function supersedeCurrentIntent(db: CommonQueryMethods, bookingId: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    INSERT INTO superseded_intent (booking_id, payment_intent_id, deposit_version)
    SELECT id, payment_intent_id, deposit_version FROM booking WHERE id = ${bookingId} AND payment_intent_id IS NOT NULL
    ON CONFLICT DO NOTHING`);
}

/** Records an intent created for a deposit version a change had replaced meanwhile (GET /pay racing the change). */
export async function supersedeIntent(db: CommonQueryMethods, bookingId: number, intentId: string, depositVersion: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    INSERT INTO superseded_intent (booking_id, payment_intent_id, deposit_version)
    VALUES (${bookingId}, ${intentId}, ${depositVersion}) ON CONFLICT DO NOTHING`);
}

/** The booking's superseded intents (its deposit changed since they were made). */
export async function supersededIntents(db: CommonQueryMethods, bookingId: number): Promise<Set<string>> {
  const rows = await db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT payment_intent_id AS id FROM superseded_intent WHERE booking_id = ${bookingId}`);
  return new Set(rows);
}
