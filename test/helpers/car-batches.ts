import { carHoldBatchSize } from '../../shared/metrics/work.js';
import type { Harness } from './harness.js';

/** Observations of car_hold_batch_size so far (this process's registry): how many statements, how many holds they carried. */
export async function batchTotals(): Promise<{ statements: number; holds: number }> {
  const { values } = await carHoldBatchSize.get();
  const of = (suffix: string) => values.find((v) => v.metricName === `car_hold_batch_size_${suffix}`)?.value ?? 0;
  return { statements: of('count'), holds: of('sum') };
}

/** Pairs of live bookings of `cars` whose blocked ranges ([from, to + turnaround)) overlap: must be none. */
export async function carOverlaps(h: Harness, cars: number[]): Promise<unknown[]> {
  const { rows } = await h.sql(`
    SELECT a.id AS a, b.id AS b, a.car_id::int AS car FROM booking a JOIN booking b ON b.car_id = a.car_id AND b.id > a.id
    WHERE a.car_id = ANY($1) AND a.kind = 'car' AND b.kind = 'car'
      AND a.status IN ('HOLD', 'CONFIRMED', 'ON_TRIP') AND b.status IN ('HOLD', 'CONFIRMED', 'ON_TRIP')
      AND a.blocked && b.blocked`, [cars]);
  return rows;
}
