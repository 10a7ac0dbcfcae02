import type { Invariant } from './types.js';

/**
 * No two live bookings (HOLD, CONFIRMED, ON_TRIP) of a car overlap, the turnaround buffer included. The buffer is
 * recomputed from the car here, not read from the trigger-derived `blocked` column the constraint relies on.
 */
export const carNoOverlap: Invariant = {
  name: 'car-no-overlap',
  async check({ query }) {
    const [row] = await query<{ checked: number; pairs: { a: number; b: number; car: number }[] }>(`
      WITH live AS (
        SELECT b.id, b.car_id,
               tstzrange(lower(b.period), upper(b.period) + make_interval(mins => c.turnaround_minutes), '[)') AS span
        FROM booking b JOIN car c ON c.id = b.car_id
        WHERE b.kind = 'car' AND b.status IN ('HOLD', 'CONFIRMED', 'ON_TRIP'))
      SELECT (SELECT count(*) FROM live)::int AS checked,
             coalesce((SELECT json_agg(json_build_object('a', x.id, 'b', y.id, 'car', x.car_id) ORDER BY x.id, y.id)
                       FROM live x JOIN live y ON x.car_id = y.car_id AND x.id < y.id AND x.span && y.span), '[]') AS pairs`);
    return {
      checked: row!.checked,
      violations: row!.pairs.map((p) => `car ${p.car}: live bookings ${p.a} and ${p.b} overlap (turnaround included)`),
    };
  },
};
