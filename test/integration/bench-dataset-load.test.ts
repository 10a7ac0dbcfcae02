import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { cloneDatabase, dropDatabase, ensureTemplate } from '../../bench/dataset/load.js';
import { runPgbench } from '../../bench/peak/pgbench.js';
import type { DatasetOptions } from '../../bench/dataset/generate.js';

// The bench's loader and its pgbench floor write rows the migrations must accept: a new column or CHECK
// (the prices round added booking_car_total and booking_stay_guests) broke both without any test noticing.
const dataset: DatasetOptions = { seed: 3, cars: 50, bookings: 500, hotCars: 5, roomTypes: 4, nights: 30, anchor: new Date().toISOString().slice(0, 10) };
const name = `bench_test_${process.pid}`;
afterAll(() => dropDatabase(name).catch(() => {}));

describe('bench dataset against the current schema', () => {
  it('loads a small catalogue with COPY, and the pgbench floor inserts holds into it', async () => {
    const template = await ensureTemplate(dataset, () => {});
    const url = await cloneDatabase(template, name);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query<{ cars: number; stays: number }>(
        "SELECT count(*) FILTER (WHERE kind = 'car')::int AS cars, count(*) FILTER (WHERE kind = 'stay')::int AS stays FROM booking");
      expect(rows[0]!.cars).toBe(500);
      expect(rows[0]!.stays).toBeGreaterThan(0);
      const floor = await runPgbench(url, { cars: 50, windowDays: 30, clients: 2, seconds: 1, file: `/tmp/${name}.pgbench.sql` }, () => {});
      expect(floor.tps).toBeGreaterThan(0);
    } finally {
      await c.end();
    }
  });
});
