/**
 * EXPLAIN (ANALYZE, BUFFERS) of the product's own queries (SQL captured from shared/db, replayed with pg) on the
 * benchmark database as it is — no statistics unless someone ran ANALYZE. The hold INSERT runs in a transaction
 * that is rolled back. Each query runs twice; the second (warm) plan is kept, with both timings.
 */
import pg from 'pg';
import { captureSql } from '../lib.js';
import { searchAvailableCars } from '../../shared/db/cars.js';
import { searchAvailability } from '../../shared/db/hotels.js';
import { insertCarHold, insertCarHoldWithEvent, type CarHoldWrite } from '../../shared/db/bookings.js';
import { insertCarHoldsWithEvents } from '../../shared/db/car-hold-batch.js';
import { claimPending } from '../../shared/db/outbox.js';
import type { PreparedDb } from '../../shared/db/prepared.js';
import { loadCarIntervals, tailCalendarChanges, tailNightChanges } from '../../shared/db/search-feed.js';
import { draftCarHeld } from '../../shared/events/outbox.js';
import { nightsBetween } from '../../shared/domain/nights.js';

/** The SQL and values a PreparedDb function sends, captured without a database. */
async function capturePrepared(fn: (db: PreparedDb) => Promise<unknown>, row: Record<string, unknown> = {}): Promise<{ text: string; values: unknown[] }> {
  let q: { text: string; values: unknown[] } | undefined;
  const fake: PreparedDb = {
    query: async <R>(_name: string, text: string, values: readonly unknown[]) => {
      q = { text, values: [...values] };
      return [{ snapshot: '1:1:', count: 0, maxId: null, list: null, ...row }] as R[];
    },
    transaction: async (fn) => fn(fake),
    end: async () => {},
  };
  await fn(fake);
  return q!;
}

/** A one-day hold of `carId` from `from` (ms), as the API writes it. */
function planHold(carId: number, from: number): CarHoldWrite {
  const hold = { customerId: 1, carId, from: new Date(from), to: new Date(from + 86_400_000), days: 1, holdExpiresAt: new Date(Date.now() + 900_000) };
  const held = draftCarHeld(new Date(), { customerId: 1, kind: 'car', carId, from: hold.from.toISOString(), to: hold.to.toISOString(), holdExpiresAt: hold.holdExpiresAt.toISOString() });
  return { hold, held };
}

export interface Plan {
  name: string;
  coldMs: number;
  warmMs: number;
  plan: string;
}

export interface PlanInputs {
  city: string;
  carFrom: Date;
  carTo: Date;
  carId: number;
  checkIn: string;
  checkOut: string;
}

async function explain(c: pg.Client, name: string, q: { text: string; values: unknown[] }, rollback = false, setup?: string): Promise<Plan> {
  const once = async () => {
    if (rollback) await c.query('BEGIN');
    if (setup) await c.query(setup);
    try {
      const t = performance.now();
      const { rows } = await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${q.text}`, q.values);
      return { ms: performance.now() - t, plan: rows.map((r) => r['QUERY PLAN']).join('\n') };
    } finally {
      if (rollback) await c.query('ROLLBACK');
    }
  };
  const cold = await once();
  const warm = await once();
  return { name, coldMs: cold.ms, warmMs: warm.ms, plan: warm.plan };
}

export async function explainAll(url: string, p: PlanInputs): Promise<Plan[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const stats = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_statistic s JOIN pg_class k ON k.oid = s.starelid WHERE k.relname IN ('car', 'booking', 'room_night')`);
    const note = stats.rows[0]!.n === 0 ? 'no planner statistics' : `${stats.rows[0]!.n} pg_statistic rows`;
    const hour = Math.ceil(Date.now() / 3_600_000) * 3_600_000;
    const ledgerMax = Number((await c.query<{ n: string | null }>('SELECT max(id) AS n FROM inventory_ledger')).rows[0]!.n ?? 0);
    const plans = [
      await explain(c, `car search (${p.city}, ${p.carFrom.toISOString()} → ${p.carTo.toISOString()}, limit 50; ${note})`,
        await captureSql((db) => searchAvailableCars(db, { city: p.city, from: p.carFrom, to: p.carTo, limit: 50 }))),
      await explain(c, `stay availability (${p.city}, ${p.checkIn} → ${p.checkOut}; ${note})`,
        await captureSql((db) => searchAvailability(db, { city: p.city, checkIn: p.checkIn, checkOut: p.checkOut, rooms: 1, nights: nightsBetween(p.checkIn, p.checkOut) }))),
      // 400 days ahead: past every seeded calendar, so the INSERT succeeds (a conflict would abort EXPLAIN).
      await explain(c, `car hold INSERT (car ${p.carId}; rolled back)`,
        await captureSql((db) => insertCarHold(db, { customerId: 1, carId: p.carId, from: new Date(hour + 400 * 86_400_000), to: new Date(hour + 403 * 86_400_000), days: 3, holdExpiresAt: new Date(Date.now() + 900_000) }),
          { id: 1, depositAmount: 1, totalAmount: 3, currency: 'VND' }), true),
      await explain(c, `car hold + booking.held, one statement (car ${p.carId}; rolled back)`,
        await capturePrepared((db) => insertCarHoldWithEvent(db, planHold(p.carId, hour + 410 * 86_400_000)),
          { id: 1, depositAmount: 1, totalAmount: 1, currency: 'VND' }), true),
      // The batch's answer does not parse from the fake's one row: only its text and values are wanted here.
      await explain(c, `car holds + booking.held, one statement for 2 (cars ${p.carId}, ${p.carId + 1}; rolled back)`,
        await capturePrepared((db) => insertCarHoldsWithEvents(db, [planHold(p.carId, hour + 420 * 86_400_000), planHold(p.carId + 1, hour + 420 * 86_400_000)]).catch(() => [])),
        true),
      // The pump runs its claim with bitmap scans off (see lockPublisher).
      await explain(c, 'outbox pump claim (1,000 rows; bitmap scans off as the pump sets it)',
        await capturePrepared((db) => claimPending(db, 1000)), true, `SELECT set_config('enable_bitmapscan', 'off', true)`),
      await explain(c, 'search index: outbox tail (cars)', await capturePrepared((db) => tailCalendarChanges(db, 0, 20_000))),
      await explain(c, 'search index: ledger tail (stays), from the last 10,000 entries',
        await capturePrepared((db) => tailNightChanges(db, Math.max(0, ledgerMax - 10_000), 20_000))),
      await explain(c, 'search index: rebuild, active car intervals', await capturePrepared((db) => loadCarIntervals(db))),
    ];
    return plans;
  } finally {
    await c.end();
  }
}
