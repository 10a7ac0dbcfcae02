import type { PreparedDb } from './prepared.js';
import type { IndexedCar } from '../domain/car-calendar.js';
import type { IndexedRoomType } from '../domain/stay-calendar.js';

// What the in-memory search indexes read: the catalogues, the current calendars (once, and on a rebuild), and
// the changes since (tails of the outbox and of the inventory ledger by id). Bulk reads come back as one text
// per car / room type, which node parses ~4× faster than 300 k rows. Every tail read also returns the
// statement's snapshot, for the gap rule of shared/search/tail-cursor.ts.

/** pg_current_snapshot(): transactions below xmin are finished; xip lists those in progress below xmax. */
export interface Snapshot {
  xmin: bigint;
  xmax: bigint;
  xip: bigint[];
}

export const parseSnapshot = (text: string): Snapshot => {
  const [xmin, xmax, xip] = text.split(':');
  return { xmin: BigInt(xmin!), xmax: BigInt(xmax!), xip: xip ? xip.split(',').map((x) => BigInt(x)) : [] };
};

/**
 * Calls `fn` for each "a,b" pair of integers in "a,b;c,d;…" without allocating (a rebuild reads 730 k nights: as
 * arrays of strings they were ~100 MB of garbage for the young generation).
 */
export function eachPair(text: string | null, fn: (a: number, b: number) => void): void {
  if (!text) return;
  let a = 0;
  let n = 0;
  let neg = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 59; // ';' closes the last pair
    if (c >= 48 && c <= 57) n = n * 10 + (c - 48);
    else if (c === 45) neg = true;
    else {
      const v = neg ? -n : n;
      if (c === 44) a = v;
      else fn(a, v);
      n = 0;
      neg = false;
    }
  }
}

/** Splits "a,b,c;d,e,f" into number tuples. */
export const tuples = (text: string | null): number[][] => (text ? text.split(';').map((t) => t.split(',').map(Number)) : []);

const carColumns = `id, plate, model, city, daily_price AS "dailyPrice", deposit_amount AS "depositAmount", currency,
  turnaround_minutes AS "turnaroundMinutes"`;

/**
 * Cars with an id above `afterId`, `limit` of them in id order. A rebuild reads the catalogue page by page: a
 * single result of 20,000 rows stays alive until its last row arrives, and every young-generation collection
 * meanwhile copies it (50–110 ms pauses measured at 20,000 cars with 300 k intervals).
 */
export async function loadCars(db: PreparedDb, afterId = 0, limit = 1_000_000): Promise<IndexedCar[]> {
  return db.query<IndexedCar>('search-cars', `SELECT ${carColumns} FROM car WHERE id > $1 ORDER BY id LIMIT $2`, [afterId, limit]);
}

/** These cars (a hold names a car the catalogue feed has not read yet: it committed after that read). */
export async function carsById(db: PreparedDb, ids: readonly number[]): Promise<IndexedCar[]> {
  return db.query<IndexedCar>('search-cars-by-id', `SELECT ${carColumns} FROM car WHERE id = ANY($1::int8[])`, [ids]);
}

/**
 * Cars inserted or updated since `after` (their catalogue_version, migration 024), up to `limit`, oldest version
 * first; one statement, one snapshot (the version index: a range scan of the changes only, polled 5×/s).
 */
export async function tailCatalogue(db: PreparedDb, after: number, limit: number): Promise<TailRead<IndexedCar>> {
  const rows = await db.query<IndexedCar & { snapshot: string; version: number | null }>('search-tail-cars', `
    SELECT pg_current_snapshot()::text AS snapshot, c.*
    FROM (SELECT 1) one LEFT JOIN LATERAL (
      SELECT ${carColumns}, catalogue_version AS version FROM car WHERE catalogue_version > $1 ORDER BY catalogue_version LIMIT $2
    ) c ON true`, [after, limit]);
  const cars = rows.filter((r) => r.version !== null);
  const entries = cars.map(({ snapshot: _s, version: _v, ...car }) => car as IndexedCar);
  return { snapshot: parseSnapshot(rows[0]!.snapshot), count: cars.length, maxId: cars.length ? Number(cars[cars.length - 1]!.version) : null, entries };
}

/** The catalogue's highest version now and the snapshot it was read in (where a rebuild starts following it). */
export async function catalogueHead(db: PreparedDb): Promise<{ snapshot: Snapshot; maxId: number }> {
  const [r] = await db.query<{ snapshot: string; maxId: number | null }>('search-cars-head', `
    SELECT pg_current_snapshot()::text AS snapshot, (SELECT catalogue_version FROM car ORDER BY catalogue_version DESC LIMIT 1) AS "maxId"`, []);
  return { snapshot: parseSnapshot(r!.snapshot), maxId: Number(r!.maxId ?? 0) };
}

/**
 * Per car, its active bookings' blocked intervals ending after now, sorted, as text "bookingId,lo,hi;…" (epoch
 * ms; `tuples` parses it — left to the caller, which spreads the parsing so a rebuild never stalls requests).
 */
export async function loadCarIntervals(db: PreparedDb, afterCarId = 0, toCarId = Number.MAX_SAFE_INTEGER): Promise<{ carId: number; list: string }[]> {
  // Cars in (afterCarId, toCarId]: a page of the catalogue (see loadCars). The bounds are int8 so that the exclusion
  // index (btree_gist: int8 operators only) serves the range; as int4 each page read every active booking.
  const rows = await db.query<{ carId: number; list: string }>('search-car-intervals', `
    SELECT car_id AS "carId",
           string_agg(concat_ws(',', id, (extract(epoch FROM lower(blocked)) * 1000)::int8, (extract(epoch FROM upper(blocked)) * 1000)::int8),
                      ';' ORDER BY lower(blocked)) AS list
    FROM booking
    WHERE kind = 'car' AND status IN ('HOLD', 'CONFIRMED', 'ON_TRIP') AND upper(blocked) > now() AND car_id > $1::int8 AND car_id <= $2::int8
    GROUP BY car_id`, [afterCarId, toCarId]);
  return rows;
}

export interface TailRead<E> {
  snapshot: Snapshot;
  /** Rows read (up to the limit, all kinds), the highest id among them; null when none. */
  count: number;
  maxId: number | null;
  entries: E[];
}

/**
 * A car calendar change from the outbox: a held car booking (blocks its car), a changed one (its interval replaced:
 * the car and period of `after`), or a booking leaving HOLD/CONFIRMED/ON_TRIP.
 */
export type CalendarChange =
  | { kind: 'held' | 'changed'; id: number; bookingId: number; carId: number; from: number; to: number }
  | { kind: 'freed'; id: number; bookingId: number };

async function tail<E>(db: PreparedDb, name: string, sql: string, after: number, limit: number, parse: (t: number[]) => E): Promise<TailRead<E>> {
  const [r] = await db.query<{ snapshot: string; count: number; maxId: number | null; list: string | null }>(name, sql, [after, limit]);
  return { snapshot: parseSnapshot(r!.snapshot), count: Number(r!.count), maxId: r!.maxId, entries: tuples(r!.list).map(parse) };
}

const epochMs = (field: string) => `(extract(epoch FROM (${field})::timestamptz) * 1000)::int8`;

/** Outbox rows after `after` (up to `limit`), of them the car calendar changes; one statement, one snapshot. */
export function tailCalendarChanges(db: PreparedDb, after: number, limit: number): Promise<TailRead<CalendarChange>> {
  return tail(db, 'search-tail-outbox', `
    WITH r AS (SELECT id, topic, payload FROM outbox WHERE id > $1 ORDER BY id LIMIT $2)
    SELECT pg_current_snapshot()::text AS snapshot, (SELECT count(*) FROM r) AS count, (SELECT max(id) FROM r) AS "maxId",
           (SELECT string_agg(CASE WHEN topic = 'booking.held'
                                   THEN concat_ws(',', id, 1, payload->>'bookingId', payload->>'carId',
                                                  ${epochMs("payload->>'from'")}, ${epochMs("payload->>'to'")})
                                   WHEN topic = 'booking.changed'
                                   THEN concat_ws(',', id, 2, payload->>'bookingId', payload->'after'->>'carId',
                                                  ${epochMs("payload->'after'->>'from'")}, ${epochMs("payload->'after'->>'to'")})
                                   ELSE concat_ws(',', id, 0, payload->>'bookingId') END, ';' ORDER BY id)
            FROM r
            WHERE (topic IN ('booking.held', 'booking.changed') AND payload->>'kind' = 'car')
               OR topic IN ('booking.expired', 'booking.cancelled', 'booking.completed')) AS list`,
  after, limit, ([id, kind, bookingId, carId, from, to]) => (kind
    ? { kind: kind === 2 ? 'changed' : 'held', id: id!, bookingId: bookingId!, carId: carId!, from: from!, to: to! }
    : { kind: 'freed', id: id!, bookingId: bookingId! }));
}

/** The outbox's highest id now and the snapshot it was read in (where a rebuild starts tailing). */
export async function outboxHead(db: PreparedDb): Promise<{ snapshot: Snapshot; maxId: number }> {
  const [r] = await db.query<{ snapshot: string; maxId: number | null }>('search-outbox-head', `
    SELECT pg_current_snapshot()::text AS snapshot, (SELECT id FROM outbox ORDER BY id DESC LIMIT 1) AS "maxId"`, []);
  return { snapshot: parseSnapshot(r!.snapshot), maxId: r!.maxId ?? 0 };
}

const roomTypeColumns = `rt.id AS "roomTypeId", h.id AS "hotelId", h.name AS "hotelName", rt.name,
  rt.deposit_amount AS "depositAmount", rt.currency, h.city`;

export async function loadRoomTypes(db: PreparedDb): Promise<IndexedRoomType[]> {
  return db.query<IndexedRoomType>('search-room-types', `SELECT ${roomTypeColumns} FROM room_type rt JOIN hotel h ON h.id = rt.hotel_id`, []);
}

/** Room types with an id above `afterId` (with their hotel), a few at a time, by primary key. */
export async function newRoomTypes(db: PreparedDb, afterId: number): Promise<IndexedRoomType[]> {
  return db.query<IndexedRoomType>('search-new-room-types', `
    SELECT ${roomTypeColumns}
    FROM (SELECT * FROM room_type WHERE id > $1 ORDER BY id LIMIT 50) rt JOIN hotel h ON h.id = rt.hotel_id`, [afterId]);
}

/** Per room type, "day,free;…" of every night from `fromDay` on (day = days since 1970-01-01; see `tuples`). */
export async function loadNights(db: PreparedDb, fromDay: number, afterRoomTypeId = 0, toRoomTypeId = Number.MAX_SAFE_INTEGER): Promise<{ roomTypeId: number; list: string }[]> {
  // Room types in (afterRoomTypeId, toRoomTypeId]: a page, as for cars (2,000 × 365 nights are 6.5 MB of text).
  const rows = await db.query<{ roomTypeId: number; list: string }>('search-nights', `
    SELECT room_type_id AS "roomTypeId",
           string_agg(concat_ws(',', night - DATE '1970-01-01', sellable - held - confirmed), ';') AS list
    FROM room_night WHERE night >= DATE '1970-01-01' + $1::int AND room_type_id > $2::int8 AND room_type_id <= $3::int8
    GROUP BY room_type_id`, [fromDay, afterRoomTypeId, toRoomTypeId]);
  return rows;
}

/** A night's counts as the ledger recorded them after a change: [ledger id, room type, day, free]. */
export function tailNightChanges(db: PreparedDb, after: number, limit: number): Promise<TailRead<number[]>> {
  return tail(db, 'search-tail-ledger', `
    WITH r AS (SELECT id, room_type_id, night, after_sellable - after_held - after_confirmed AS free
               FROM inventory_ledger WHERE id > $1 ORDER BY id LIMIT $2)
    SELECT pg_current_snapshot()::text AS snapshot, (SELECT count(*) FROM r) AS count, (SELECT max(id) FROM r) AS "maxId",
           (SELECT string_agg(concat_ws(',', id, room_type_id, night - DATE '1970-01-01', free), ';' ORDER BY id) FROM r) AS list`,
  after, limit, (t) => t);
}

export async function ledgerHead(db: PreparedDb): Promise<{ snapshot: Snapshot; maxId: number }> {
  const [r] = await db.query<{ snapshot: string; maxId: number | null }>('search-ledger-head', `
    SELECT pg_current_snapshot()::text AS snapshot, (SELECT id FROM inventory_ledger ORDER BY id DESC LIMIT 1) AS "maxId"`, []);
  return { snapshot: parseSnapshot(r!.snapshot), maxId: r!.maxId ?? 0 };
}

/** Of these in-progress xids, those whose transaction runs in another database (it cannot write ours). */
export async function xidsOfOtherDatabases(db: PreparedDb, xids: readonly bigint[]): Promise<Set<bigint>> {
  const rows = await db.query<{ xid: string }>('search-other-db-xids', `
    SELECT backend_xid::text AS xid FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()`, []);
  // backend_xid is the 32-bit xid; snapshots carry the 64-bit xid8 (epoch << 32 | xid).
  const other = new Set(rows.map((r) => BigInt(r.xid)));
  return new Set(xids.filter((x) => other.has(x & 0xffffffffn)));
}
