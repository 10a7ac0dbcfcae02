import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import type { PreparedQueries } from './prepared.js';
import { CALENDAR_DEFAULTS, nightOrDefault, type CalendarChange, type CalendarFields, type CalendarNight } from '../domain/rates.js';
import { datesFrom } from '../domain/hotel-dates.js';

export const ratePlanRow = z.object({ id: z.number(), roomTypeId: z.number(), name: z.string(), currency: z.string() });
export type RatePlanRow = z.infer<typeof ratePlanRow>;

/** Creates the plan in the room type's currency; null when the room type does not exist. */
export async function insertRatePlan(db: CommonQueryMethods, p: { roomTypeId: number; name: string }): Promise<RatePlanRow | null> {
  return db.maybeOne(sql.type(ratePlanRow)`
    WITH rt AS (SELECT id, currency FROM room_type WHERE id = ${p.roomTypeId}),
         ins AS (INSERT INTO rate_plan (room_type_id, name) SELECT id, ${p.name} FROM rt RETURNING id, room_type_id, name)
    SELECT ins.id, ins.room_type_id AS "roomTypeId", ins.name, rt.currency FROM ins, rt`);
}

/** A room type's plan by name (the demo seed reuses what exists). */
export async function findRatePlanByName(db: CommonQueryMethods, roomTypeId: number, name: string): Promise<RatePlanRow | null> {
  return db.maybeOne(sql.type(ratePlanRow)`
    SELECT rp.id, rp.room_type_id AS "roomTypeId", rp.name, rt.currency
    FROM rate_plan rp JOIN room_type rt ON rt.id = rp.room_type_id
    WHERE rp.room_type_id = ${roomTypeId} AND rp.name = ${name}
    ORDER BY rp.id LIMIT 1`);
}

/**
 * The plan, optionally locked. `write`: calendar writers of the plan (FOR NO KEY UPDATE, which leaves the
 * foreign-key checks of bookings and nights unblocked). `share`: a hold on the plan, taken after its
 * room-night locks; it waits for a calendar write in progress and holds later ones off until it commits, so
 * the calendar the hold reads next is entirely before or entirely after any change. (Row locks on the nights
 * themselves could not do this: a night that was never set has no row to lock.)
 */
export async function findRatePlan(db: CommonQueryMethods, id: number, lock?: 'write' | 'share'): Promise<RatePlanRow | null> {
  const mode = lock === 'write' ? sql.fragment`FOR NO KEY UPDATE OF rp` : lock === 'share' ? sql.fragment`FOR SHARE OF rp` : sql.fragment``;
  return db.maybeOne(sql.type(ratePlanRow)`
    SELECT rp.id, rp.room_type_id AS "roomTypeId", rp.name, rt.currency
    FROM rate_plan rp JOIN room_type rt ON rt.id = rp.room_type_id
    WHERE rp.id = ${id} ${mode}`);
}

const storedNight = z.object({
  date: z.string(),
  price: z.number().nullable(),
  minStay: z.number(),
  maxStay: z.number(),
  closedToArrival: z.boolean(),
  closedToDeparture: z.boolean(),
  stopSell: z.boolean(),
});
const nightColumns = sql.fragment`night::text AS date, price, min_stay AS "minStay", max_stay AS "maxStay",
  closed_to_arrival AS "closedToArrival", closed_to_departure AS "closedToDeparture", stop_sell AS "stopSell"`;

/** Every date of [from, from + count): the stored night, or the defaults where it was never set. */
function fill(from: string, count: number, stored: readonly CalendarNight[]): CalendarNight[] {
  const byDate = new Map(stored.map((n) => [n.date, n]));
  return datesFrom(from, count).map((date) => byDate.get(date) ?? nightOrDefault(date, undefined));
}

/** Every night of [from, from + count), defaults where never set (one index range scan). */
export async function listCalendar(db: CommonQueryMethods, ratePlanId: number, from: string, count: number): Promise<CalendarNight[]> {
  const stored = await db.any(sql.type(storedNight)`
    SELECT ${nightColumns} FROM rate_night
    WHERE rate_plan_id = ${ratePlanId} AND night >= ${from}::date AND night < ${from}::date + ${count}::int
    ORDER BY night`);
  return fill(from, count, stored);
}

const columnOf: Record<keyof CalendarFields, string> = {
  price: 'price', minStay: 'min_stay', maxStay: 'max_stay',
  closedToArrival: 'closed_to_arrival', closedToDeparture: 'closed_to_departure', stopSell: 'stop_sell',
};

/**
 * Writes the given fields on every night of [from, from + count), in date order; nights never set get the
 * defaults for the others. The ledger trigger records each changed night. The caller holds the plan's write lock.
 */
export async function writeCalendar(db: CommonQueryMethods, ratePlanId: number, from: string, count: number, change: CalendarChange): Promise<void> {
  const v = { ...CALENDAR_DEFAULTS, ...change };
  const given = (Object.keys(columnOf) as (keyof CalendarFields)[]).filter((f) => change[f] !== undefined);
  const sets = given.map((f) => sql.fragment`${sql.identifier([columnOf[f]])} = EXCLUDED.${sql.identifier([columnOf[f]])}`);
  await db.query(sql.typeAlias('void')`
    INSERT INTO rate_night (rate_plan_id, night, price, min_stay, max_stay, closed_to_arrival, closed_to_departure, stop_sell)
    SELECT ${ratePlanId}, ${from}::date + i, ${v.price}::bigint, ${v.minStay}, ${v.maxStay},
           ${v.closedToArrival}, ${v.closedToDeparture}, ${v.stopSell}
    FROM generate_series(0, ${count - 1}) i
    ORDER BY i
    ON CONFLICT (rate_plan_id, night) DO UPDATE SET ${sql.join(sets, sql.fragment`, `)}`);
}

/** What a stay is judged on: room availability and the plan's calendar, per date of [checkIn, checkOut]. */
export interface StayNights {
  /** Free rooms of each night of [checkIn, checkOut) that has inventory. */
  roomNights: readonly { date: string; available: number }[];
  /** The calendar of [checkIn, checkOut) and the checkOut date's own entry; null without a plan. */
  rate: { nights: CalendarNight[]; departure: CalendarNight } | null;
}

export const stayCatalogueRow = z.object({
  roomTypeId: z.number(),
  hotelId: z.number(),
  depositAmount: z.number(),
  currency: z.string(),
  maxGuests: z.number(),
  timezone: z.string(),
  /** The room type of the rate plan asked for; null when there is no such plan (or none was asked for). */
  ratePlanRoomTypeId: z.number().nullable(),
});
export type StayCatalogue = z.infer<typeof stayCatalogueRow>;

const catalogueColumns = sql.fragment`rt.id AS "roomTypeId", rt.hotel_id AS "hotelId", rt.deposit_amount AS "depositAmount", rt.currency,
  rt.max_guests AS "maxGuests", h.timezone, rp.room_type_id AS "ratePlanRoomTypeId"`;
const catalogueFrom = (roomTypeId: number, ratePlanId: number | null) => sql.fragment`
  FROM room_type rt
  JOIN hotel h ON h.id = rt.hotel_id
  LEFT JOIN rate_plan rp ON rp.id = ${ratePlanId}::bigint
  WHERE rt.id = ${roomTypeId}`;

/** The room type, its hotel's zone and the rate plan's room type, in one read; null when the room type does not exist. */
export async function findStayCatalogue(db: CommonQueryMethods, roomTypeId: number, ratePlanId: number | null): Promise<StayCatalogue | null> {
  return db.maybeOne(sql.type(stayCatalogueRow)`SELECT ${catalogueColumns} ${catalogueFrom(roomTypeId, ratePlanId)}`);
}

const stayRead = stayCatalogueRow.extend({
  roomNights: z.array(z.object({ date: z.string(), available: z.number() })),
  rateNights: z.array(storedNight),
});

export interface StayReadQuery {
  roomTypeId: number;
  ratePlanId: number | null;
  checkIn: string;
  nightCount: number;
}
export type StayRead = { catalogue: StayCatalogue; nights: StayNights } | null;

/**
 * The room type's catalogue entry with the stay's room nights and calendar, in ONE statement, so one snapshot:
 * what a quote is decided on, and the unlocked read of the holds' fast refusal. Primary-key lookups and two index
 * range scans (room nights of [checkIn, checkOut), calendar of [checkIn, checkOut]); without a plan (null) the
 * calendar part is null. Null when the room type does not exist.
 */
export async function readStay(db: PreparedQueries, q: StayReadQuery): Promise<StayRead> {
  return (await readStays(db, [q]))[0]!;
}

/**
 * readStay for several stays in one statement (one round trip, one snapshot): one answer per query, in order. Each
 * query reads its rows by key (LATERAL … OFFSET 0 keeps the planner from a join over a whole table, whatever the
 * statistics say: autovacuum may be off).
 */
export async function readStays(db: PreparedQueries, qs: readonly StayReadQuery[]): Promise<StayRead[]> {
  // Prepared (shared/db/prepared.ts): a quote is this read and one INSERT, and slonik's per-query work and the
  // server's planning of this statement were most of a quote's CPU. The same columns as catalogueColumns/catalogueFrom.
  const rows = await db.query<{ ord: number }>('read-stays', `
    SELECT q.ord::int AS ord, s.*,
      (SELECT coalesce(json_agg(json_build_object('date', n.night::text, 'available', n.sellable - n.held - n.confirmed) ORDER BY n.night), '[]')
       FROM room_night n WHERE n.room_type_id = q.room_type_id AND n.night >= q.check_in AND n.night < q.check_in + q.night_count) AS "roomNights",
      (SELECT coalesce(json_agg(json_build_object('date', r.night::text, 'price', r.price, 'minStay', r.min_stay, 'maxStay', r.max_stay,
                'closedToArrival', r.closed_to_arrival, 'closedToDeparture', r.closed_to_departure, 'stopSell', r.stop_sell) ORDER BY r.night), '[]')
       FROM rate_night r WHERE r.rate_plan_id = q.rate_plan_id AND r.night >= q.check_in AND r.night <= q.check_in + q.night_count) AS "rateNights"
    FROM unnest($1::int8[], $2::int8[], $3::date[], $4::int4[]) WITH ORDINALITY AS q(room_type_id, rate_plan_id, check_in, night_count, ord)
    JOIN LATERAL (
      SELECT rt.id AS "roomTypeId", rt.hotel_id AS "hotelId", rt.deposit_amount AS "depositAmount", rt.currency,
        rt.max_guests AS "maxGuests", h.timezone, rp.room_type_id AS "ratePlanRoomTypeId"
      FROM room_type rt
      JOIN hotel h ON h.id = rt.hotel_id
      LEFT JOIN rate_plan rp ON rp.id = q.rate_plan_id
      WHERE rt.id = q.room_type_id
      OFFSET 0
    ) s ON true`,
  [qs.map((q) => q.roomTypeId), qs.map((q) => q.ratePlanId), qs.map((q) => q.checkIn), qs.map((q) => q.nightCount)]);
  const byOrd = new Map(rows.map((r) => [r.ord, r]));
  return qs.map((q, i) => {
    const raw = byOrd.get(i + 1);
    if (raw === undefined) return null; // no such room type
    const { roomNights, rateNights, ...catalogue } = stayRead.parse(raw);
    if (q.ratePlanId === null) return { catalogue, nights: { roomNights, rate: null } };
    const calendar = fill(q.checkIn, q.nightCount + 1, rateNights);
    return { catalogue, nights: { roomNights, rate: { nights: calendar.slice(0, q.nightCount), departure: calendar[q.nightCount]! } } };
  });
}
