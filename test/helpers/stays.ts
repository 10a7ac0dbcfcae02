import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import type { Reply } from './http.js';
import { operatorToken } from './bookings.js';

/**
 * SQL prefix for room types $1: `b` = rooms that bookings occupy per night (HOLD → held,
 * CONFIRMED/ON_TRIP → confirmed), `n` = the counters those nights hold.
 */
export const NIGHTS_VS_BOOKINGS = `WITH b AS (
    SELECT room_type_id, d::date AS night,
           coalesce(sum(rooms) FILTER (WHERE status = 'HOLD'), 0)::int AS held,
           coalesce(sum(rooms) FILTER (WHERE status IN ('CONFIRMED', 'ON_TRIP')), 0)::int AS confirmed
    FROM booking CROSS JOIN LATERAL generate_series(check_in, check_out - 1, interval '1 day') d
    WHERE kind = 'stay' AND room_type_id = ANY($1::bigint[])
    GROUP BY 1, 2),
  n AS (SELECT * FROM room_night WHERE room_type_id = ANY($1::bigint[]))`;

/** `date` plus `n` days, both YYYY-MM-DD. */
export const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

export interface Night {
  date: string;
  sellable: number;
  held: number;
  confirmed: number;
  available: number;
}

/** An inventory night as the API shows it (available = sellable − held − confirmed). */
export const night = (date: string, sellable: number, held = 0, confirmed = 0): Night => ({
  date, sellable, held, confirmed, available: sellable - held - confirmed,
});

/** How many inventory ledger entries the room type has. */
export const ledgerCount = async (h: Harness, roomTypeId: number) =>
  (await h.sql(`SELECT count(*)::int AS n FROM inventory_ledger WHERE room_type_id = $1`, [roomTypeId])).rows[0].n as number;

export type StayApi = ReturnType<typeof stayApi>;

/**
 * For a test file about stays: a harness, its stayApi and a hotel in HCM, handed to `use` once started,
 * closed after the file. Every hold comes from a fresh customer anyway; the high HOLD_RATE_LIMIT only keeps
 * the limiter out of the picture.
 */
export function withStayHarness(use: (f: { h: Harness; api: StayApi; hotelId: number }) => void): void {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
    const api = stayApi(h);
    use({ h, api, hotelId: (await api.hotel({ city: 'HCM' })).id });
  });
  afterAll(async () => h?.close());
}

/** Small API client for the hotel side, as an operator (OPERATOR_ID) unless told otherwise. */
export function stayApi(h: Harness) {
  const operator = operatorToken(h);
  return {
    operator,
    async hotel(o: { city?: string; timezone?: string; checkInTime?: string; name?: string } = {}) {
      const r = await h.req('POST', '/hotels', {
        token: operator,
        body: { name: o.name ?? `Hotel ${randomUUID().slice(0, 6)}`, city: o.city ?? 'HCM', timezone: o.timezone ?? 'Asia/Ho_Chi_Minh', ...(o.checkInTime ? { checkInTime: o.checkInTime } : {}) },
      });
      expect(r.status, r.text).toBe(201);
      return r.json as { id: number; name: string; city: string; timezone: string; checkInTime: string };
    },
    async roomType(hotelId: number, depositAmount = 1_000_000, name = `Room ${randomUUID().slice(0, 6)}`) {
      const r = await h.req('POST', `/hotels/${hotelId}/room-types`, { token: operator, body: { name, depositAmount } });
      expect(r.status, r.text).toBe(201);
      return r.json as { id: number; hotelId: number; name: string; depositAmount: number; currency: string };
    },
    put: (roomTypeId: number, from: string, to: string, sellable: number, reason = 'test setup', token = operator) =>
      h.req('PUT', `/room-types/${roomTypeId}/inventory`, { token, body: { from, to, sellable, reason } }),
    async setInventory(roomTypeId: number, from: string, to: string, sellable: number) {
      const r = await this.put(roomTypeId, from, to, sellable);
      expect(r.status, r.text).toBe(200);
      return r.json.nights as Night[];
    },
    async nights(roomTypeId: number, from: string, to: string): Promise<Night[]> {
      const r = await h.req('GET', `/room-types/${roomTypeId}/inventory?from=${from}&to=${to}`, { token: operator });
      expect(r.status, r.text).toBe(200);
      return r.json.nights as Night[];
    },
    hold: (customer: number, roomTypeId: number, checkIn: string, checkOut: string, rooms?: number): Promise<Reply> =>
      h.req('POST', '/bookings', {
        token: h.token(customer, 'customer'),
        body: { roomTypeId, checkIn, checkOut, ...(rooms === undefined ? {} : { rooms }) },
      }),
  };
}

/** Runs read-only queries in one REPEATABLE READ snapshot, so concurrent commits cannot skew a check. */
export async function inSnapshot<T>(h: Harness, fn: (q: (text: string, params?: unknown[]) => Promise<any[]>) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: h.config.DATABASE_URL });
  await c.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const out = await fn(async (text, params) => (await c.query(text, params as unknown[])).rows);
    await c.query('COMMIT');
    return out;
  } finally {
    await c.end();
  }
}

interface LedgerEntry {
  id: number;
  rt: number;
  night: string;
  actor: string;
  reason: string;
  bid: number | null;
  bs: number;
  bh: number;
  bc: number;
  as: number;
  ah: number;
  ac: number;
}

// Ledger reasons each final status leaves on every night of the stay, and the counter moves of each reason.
const PATHS: Record<string, string[][]> = {
  HOLD: [['hold']],
  CONFIRMED: [['hold', 'HOLD -> CONFIRMED']],
  ON_TRIP: [['hold', 'HOLD -> CONFIRMED']],
  COMPLETED: [['hold', 'HOLD -> CONFIRMED', 'ON_TRIP -> COMPLETED']],
  EXPIRED: [['hold', 'HOLD -> EXPIRED']],
  CANCELLED: [['hold', 'HOLD -> CANCELLED'], ['hold', 'HOLD -> CONFIRMED', 'CONFIRMED -> CANCELLED']],
};
const MOVES: Record<string, [held: number, confirmed: number]> = {
  hold: [1, 0],
  'HOLD -> CONFIRMED': [-1, 1],
  'HOLD -> EXPIRED': [-1, 0],
  'HOLD -> CANCELLED': [-1, 0],
  'CONFIRMED -> CANCELLED': [0, -1],
  'ON_TRIP -> COMPLETED': [0, -1],
};

/**
 * The stay inventory invariants, checked in one snapshot for the given room types:
 *  1. per night held = Σ rooms of HOLD bookings covering it, confirmed = Σ rooms of CONFIRMED + ON_TRIP ones,
 *     held + confirmed ≤ sellable, and no booking covers a night without a row;
 *  2. replaying the ledger per night from zeros: each entry's before = the previous after, the last after = now;
 *  3. every booking's entries on every night it covers follow its status path, with the expected actor and
 *     counter moves of exactly `rooms`; entries without a booking (adjustments) only move sellable.
 * Returns the number of ledger entries and bookings checked.
 */
export async function checkStayInvariants(h: Harness, roomTypeIds: number[]) {
  const { mismatches, ledger, nights, bookings } = await inSnapshot(h, async (q) => ({
    mismatches: await q(
      `${NIGHTS_VS_BOOKINGS}
       SELECT coalesce(n.room_type_id, b.room_type_id)::int AS rt, coalesce(n.night, b.night)::text AS night,
              n.sellable, n.held, n.confirmed, b.held AS "bookedHeld", b.confirmed AS "bookedConfirmed"
       FROM n FULL JOIN b ON b.room_type_id = n.room_type_id AND b.night = n.night
       WHERE n.night IS NULL OR n.held <> coalesce(b.held, 0) OR n.confirmed <> coalesce(b.confirmed, 0)
          OR n.held + n.confirmed > n.sellable`,
      [roomTypeIds],
    ),
    ledger: (await q(
      `SELECT id::int, room_type_id::int AS rt, night::text, actor, reason, booking_id::int AS bid,
              before_sellable AS bs, before_held AS bh, before_confirmed AS bc,
              after_sellable AS "as", after_held AS ah, after_confirmed AS ac
       FROM inventory_ledger WHERE room_type_id = ANY($1::bigint[]) ORDER BY id`,
      [roomTypeIds],
    )) as LedgerEntry[],
    nights: await q(
      `SELECT room_type_id::int AS rt, night::text, sellable, held, confirmed FROM room_night WHERE room_type_id = ANY($1::bigint[])`,
      [roomTypeIds],
    ),
    bookings: await q(
      `SELECT id::int, status, customer_id::int AS "customerId", room_type_id::int AS rt, rooms,
              check_in::text AS "checkIn", check_out::text AS "checkOut"
       FROM booking WHERE kind = 'stay' AND room_type_id = ANY($1::bigint[])`,
      [roomTypeIds],
    ),
  }));

  // 1. counts equal the bookings, never oversold.
  expect(mismatches, 'room_night counts vs bookings').toEqual([]);

  // 2. ledger replay per night.
  const state = new Map<string, { sellable: number; held: number; confirmed: number }>();
  for (const e of ledger) {
    const key = `${e.rt}|${e.night}`;
    const prev = state.get(key) ?? { sellable: 0, held: 0, confirmed: 0 };
    expect({ sellable: e.bs, held: e.bh, confirmed: e.bc }, `ledger entry ${e.id} before (${key})`).toEqual(prev);
    expect(e.actor.length > 0 && e.reason.length > 0, `ledger entry ${e.id} attributed`).toBe(true);
    expect(e.ah + e.ac, `ledger entry ${e.id} within sellable`).toBeLessThanOrEqual(e.as);
    state.set(key, { sellable: e.as, held: e.ah, confirmed: e.ac });
  }
  expect(state.size, 'every night has ledger entries and vice versa').toBe(nights.length);
  for (const n of nights) {
    expect(state.get(`${n.rt}|${n.night}`), `ledger replay of ${n.rt}|${n.night}`).toEqual({
      sellable: n.sellable, held: n.held, confirmed: n.confirmed,
    });
  }

  // 3. per-booking ledger paths.
  const byBooking = new Map<number, LedgerEntry[]>();
  for (const e of ledger) {
    if (e.bid === null) {
      expect([e.ah - e.bh, e.ac - e.bc], `adjustment ${e.id} moves only sellable`).toEqual([0, 0]);
      expect(e.actor, `adjustment ${e.id} actor`).toMatch(/^operator:\d+$/);
      continue;
    }
    (byBooking.get(e.bid) ?? byBooking.set(e.bid, []).get(e.bid)!).push(e);
  }
  for (const b of bookings) {
    const entries = byBooking.get(b.id) ?? [];
    byBooking.delete(b.id);
    const nightsOfStay: string[] = [];
    for (let d = b.checkIn; d < b.checkOut; d = addDays(d, 1)) nightsOfStay.push(d);
    const reasonsPerNight = nightsOfStay.map((night) => entries.filter((e) => e.night === night).map((e) => e.reason));
    const path = reasonsPerNight[0]!;
    expect(PATHS[b.status], `booking ${b.id} (${b.status}) ledger path ${JSON.stringify(reasonsPerNight)}`).toContainEqual(path);
    for (const r of reasonsPerNight) expect(r, `booking ${b.id}: same path on every night`).toEqual(path);
    expect(entries.length, `booking ${b.id}: no entries outside its nights`).toBe(path.length * nightsOfStay.length);
    for (const e of entries) {
      const [dh, dc] = MOVES[e.reason]!;
      expect([e.as - e.bs, e.ah - e.bh, e.ac - e.bc], `entry ${e.id} (${e.reason}) of booking ${b.id}`).toEqual([0, dh * b.rooms, dc * b.rooms]);
      const actor =
        e.reason === 'hold' ? `customer:${b.customerId}`
        : e.reason === 'HOLD -> CONFIRMED' ? 'system:payment'
        : e.reason === 'HOLD -> EXPIRED' ? 'system:expiry'
        : null;
      if (actor) expect(e.actor, `entry ${e.id} actor`).toBe(actor);
      else expect(e.actor, `entry ${e.id} actor`).toMatch(/^(customer|operator|host):\d+$/);
    }
  }
  expect([...byBooking.keys()], 'ledger entries naming unknown bookings').toEqual([]);
  return { entries: ledger.length, bookings: bookings.length, nights: nights.length };
}

/**
 * PostgreSQL detected no deadlock in the harness's database. slonik retries a transaction that failed with a
 * 40xxx error (deadlock included) up to 5 times without a word, so "no 500" alone would not show that the lock
 * order is right: PostgreSQL's own counter must stay 0. Backends publish it within 10 s of going idle (PG 15
 * cumulative stats), hence the wait after `lastConcurrentAt` (when the last burst of concurrent writers ended).
 */
export async function expectNoDeadlocks(h: Harness, lastConcurrentAt: number): Promise<void> {
  const wait = 10_500 - (Date.now() - lastConcurrentAt);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const { rows } = await h.sql(`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`);
  expect(rows[0].n).toBe(0);
}

export type Prng = ReturnType<typeof prng>;

/** Deterministic PRNG (mulberry32). */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const weighted = <K extends string>(w: Record<K, number>): K => {
    const total = Object.values<number>(w).reduce((s, x) => s + x, 0);
    let r = next() * total;
    for (const [k, x] of Object.entries<number>(w)) if ((r -= x) < 0) return k as K;
    return Object.keys(w)[0] as K;
  };
  return { next, int, pick, weighted };
}
