/**
 * EXPLAIN (ANALYZE, BUFFERS) of the product's own queries (SQL captured from shared/db, replayed with pg) on the
 * benchmark database as it is — no statistics unless someone ran ANALYZE. The hold INSERT runs in a transaction
 * that is rolled back. Each query runs twice; the second (warm) plan is kept, with both timings.
 */
import pg from 'pg';
import { captureSql } from '../lib.js';
import { searchAvailableCars } from '../../shared/db/cars.js';
import { searchAvailability } from '../../shared/db/hotels.js';
import { insertCarHold } from '../../shared/db/bookings.js';
import { nightsBetween } from '../../shared/domain/nights.js';

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

async function explain(c: pg.Client, name: string, q: { text: string; values: unknown[] }, rollback = false): Promise<Plan> {
  const once = async () => {
    if (rollback) await c.query('BEGIN');
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
    const plans = [
      await explain(c, `car search (${p.city}, ${p.carFrom.toISOString()} → ${p.carTo.toISOString()}, limit 50; ${note})`,
        await captureSql((db) => searchAvailableCars(db, { city: p.city, from: p.carFrom, to: p.carTo, limit: 50 }))),
      await explain(c, `stay availability (${p.city}, ${p.checkIn} → ${p.checkOut}; ${note})`,
        await captureSql((db) => searchAvailability(db, { city: p.city, checkIn: p.checkIn, checkOut: p.checkOut, rooms: 1, nights: nightsBetween(p.checkIn, p.checkOut) }))),
      // 400 days ahead: past every seeded calendar, so the INSERT succeeds (a conflict would abort EXPLAIN).
      await explain(c, `car hold INSERT (car ${p.carId}; rolled back)`,
        await captureSql((db) => insertCarHold(db, { customerId: 1, carId: p.carId, from: new Date(hour + 400 * 86_400_000), to: new Date(hour + 403 * 86_400_000), holdExpiresAt: new Date(Date.now() + 900_000) }),
          { id: 1, depositAmount: 1, currency: 'VND' }), true),
    ];
    return plans;
  } finally {
    await c.end();
  }
}
