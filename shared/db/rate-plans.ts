import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { CALENDAR_DEFAULTS, nightOrDefault, type CalendarChange, type CalendarFields, type CalendarNight } from '../domain/rates.js';

export const ratePlanRow = z.object({ id: z.number(), roomTypeId: z.number(), name: z.string(), currency: z.string() });
export type RatePlanRow = z.infer<typeof ratePlanRow>;

/** Creates the plan in the room type's currency; null when the room type does not exist. */
export async function insertRatePlan(db: CommonQueryMethods, p: { roomTypeId: number; name: string }): Promise<RatePlanRow | null> {
  return db.maybeOne(sql.type(ratePlanRow)`
    WITH rt AS (SELECT id, currency FROM room_type WHERE id = ${p.roomTypeId}),
         ins AS (INSERT INTO rate_plan (room_type_id, name) SELECT id, ${p.name} FROM rt RETURNING id, room_type_id, name)
    SELECT ins.id, ins.room_type_id AS "roomTypeId", ins.name, rt.currency FROM ins, rt`);
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

// A stored night's columns; every one is null when the night has no row.
const storedColumns = {
  set: z.boolean(),
  price: z.number().nullable(),
  minStay: z.number().nullable(),
  maxStay: z.number().nullable(),
  closedToArrival: z.boolean().nullable(),
  closedToDeparture: z.boolean().nullable(),
  stopSell: z.boolean().nullable(),
};
const rateColumns = sql.fragment`r.night IS NOT NULL AS "set", r.price, r.min_stay AS "minStay", r.max_stay AS "maxStay",
  r.closed_to_arrival AS "closedToArrival", r.closed_to_departure AS "closedToDeparture", r.stop_sell AS "stopSell"`;

type Stored = { date: string } & { [K in keyof typeof storedColumns]: z.infer<(typeof storedColumns)[K]> };
const toNight = ({ date, set, ...fields }: Stored): CalendarNight => nightOrDefault(date, set ? (fields as CalendarFields) : undefined);

/** Every night of [from, from + count), defaults where never set. */
export async function listCalendar(db: CommonQueryMethods, ratePlanId: number, from: string, count: number): Promise<CalendarNight[]> {
  const rows = await db.any(sql.type(z.object({ date: z.string(), ...storedColumns }))`
    SELECT (${from}::date + i)::text AS date, ${rateColumns}
    FROM generate_series(0, ${count - 1}) i
    LEFT JOIN rate_night r ON r.rate_plan_id = ${ratePlanId} AND r.night = ${from}::date + i
    ORDER BY i`);
  return rows.map(toNight);
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
  await db.query(sql.unsafe`
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
  roomNights: { date: string; available: number }[];
  /** The calendar of [checkIn, checkOut) and the checkOut date's own entry; null without a plan. */
  rate: { nights: CalendarNight[]; departure: CalendarNight } | null;
}

/**
 * The stay's room nights and calendar in ONE statement, so one snapshot: the unlocked read of quotes and of the
 * holds' fast refusal. Without a plan (null) the calendar part is empty.
 */
export async function readStayNights(
  db: CommonQueryMethods,
  q: { roomTypeId: number; ratePlanId: number | null; checkIn: string; nightCount: number },
): Promise<StayNights> {
  const rows = await db.any(sql.type(z.object({ date: z.string(), available: z.number().nullable(), ...storedColumns }))`
    SELECT (${q.checkIn}::date + i)::text AS date, n.sellable - n.held - n.confirmed AS available, ${rateColumns}
    FROM generate_series(0, ${q.nightCount}) i
    LEFT JOIN room_night n ON n.room_type_id = ${q.roomTypeId} AND n.night = ${q.checkIn}::date + i AND i < ${q.nightCount}
    LEFT JOIN rate_night r ON r.rate_plan_id = ${q.ratePlanId}::bigint AND r.night = ${q.checkIn}::date + i
    ORDER BY i`);
  const roomNights = rows.filter((r) => r.available !== null).map((r) => ({ date: r.date, available: r.available! }));
  if (q.ratePlanId === null) return { roomNights, rate: null };
  const calendar = rows.map(toNight);
  return { roomNights, rate: { nights: calendar.slice(0, q.nightCount), departure: calendar[q.nightCount]! } };
}

export const stayCatalogueRow = z.object({
  roomTypeId: z.number(),
  depositAmount: z.number(),
  currency: z.string(),
  maxGuests: z.number(),
  timezone: z.string(),
  /** The room type of the rate plan asked for; null when there is no such plan (or none was asked for). */
  ratePlanRoomTypeId: z.number().nullable(),
});
export type StayCatalogue = z.infer<typeof stayCatalogueRow>;

/** The room type, its hotel's zone and the rate plan's room type, in one read; null when the room type does not exist. */
export async function findStayCatalogue(db: CommonQueryMethods, roomTypeId: number, ratePlanId: number | null): Promise<StayCatalogue | null> {
  return db.maybeOne(sql.type(stayCatalogueRow)`
    SELECT rt.id AS "roomTypeId", rt.deposit_amount AS "depositAmount", rt.currency, rt.max_guests AS "maxGuests",
           h.timezone, rp.room_type_id AS "ratePlanRoomTypeId"
    FROM room_type rt
    JOIN hotel h ON h.id = rt.hotel_id
    LEFT JOIN rate_plan rp ON rp.id = ${ratePlanId}::bigint
    WHERE rt.id = ${roomTypeId}`);
}
