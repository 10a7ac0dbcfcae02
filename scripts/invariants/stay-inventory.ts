import type { Invariant } from './types.js';

/**
 * Per room-type-night: `held` is the sum of rooms over HOLD stays covering the night, `confirmed` over CONFIRMED and
 * ON_TRIP stays; and the inventory ledger replays to the counts: per night, entries chain (each `before` is the
 * previous `after`, the first starts from zero) and the last `after` is the row as it is.
 */
export const stayInventory: Invariant = {
  name: 'stay-inventory',
  async check({ query }) {
    const counts = await query<{ rt: number; night: string; held: number | null; confirmed: number | null; wantHeld: number; wantConfirmed: number }>(`
      WITH stays AS (
        SELECT b.room_type_id, d::date AS night,
               coalesce(sum(b.rooms) FILTER (WHERE b.status = 'HOLD'), 0)::int AS held,
               coalesce(sum(b.rooms) FILTER (WHERE b.status IN ('CONFIRMED', 'ON_TRIP')), 0)::int AS confirmed
        FROM booking b, generate_series(b.check_in, b.check_out - 1, interval '1 day') d
        WHERE b.kind = 'stay' AND b.status IN ('HOLD', 'CONFIRMED', 'ON_TRIP')
        GROUP BY 1, 2)
      SELECT room_type_id AS rt, night::text AS night, n.held, n.confirmed,
             coalesce(s.held, 0) AS "wantHeld", coalesce(s.confirmed, 0) AS "wantConfirmed"
      FROM room_night n FULL JOIN stays s USING (room_type_id, night)`);
    const violations = counts
      .filter((c) => c.held !== c.wantHeld || c.confirmed !== c.wantConfirmed)
      .map((c) => c.held === null
        ? `room type ${c.rt} ${c.night}: live stays hold ${c.wantHeld}/${c.wantConfirmed} rooms on a night without inventory`
        : `room type ${c.rt} ${c.night}: held/confirmed ${c.held}/${c.confirmed}, live stays say ${c.wantHeld}/${c.wantConfirmed}`);

    const breaks = await query<{ rt: number; night: string; id: number }>(`
      SELECT room_type_id AS rt, night::text AS night, id FROM (
        SELECT room_type_id, night, id, before_sellable, before_held, before_confirmed,
               lag(after_sellable) OVER w AS ps, lag(after_held) OVER w AS ph, lag(after_confirmed) OVER w AS pc
        FROM inventory_ledger WINDOW w AS (PARTITION BY room_type_id, night ORDER BY id)) l
      WHERE (before_sellable, before_held, before_confirmed) IS DISTINCT FROM (coalesce(ps, 0), coalesce(ph, 0), coalesce(pc, 0))`);
    for (const b of breaks) violations.push(`room type ${b.rt} ${b.night}: ledger entry ${b.id} does not start where the previous one ended`);

    const finals = await query<{ rt: number; night: string; last: number | null }>(`
      SELECT n.room_type_id AS rt, n.night::text AS night, l.id AS last
      FROM room_night n
      LEFT JOIN LATERAL (SELECT * FROM inventory_ledger x WHERE x.room_type_id = n.room_type_id AND x.night = n.night
                         ORDER BY id DESC LIMIT 1) l ON true
      WHERE l.id IS NULL OR (l.after_sellable, l.after_held, l.after_confirmed) <> (n.sellable, n.held, n.confirmed)`);
    for (const f of finals) {
      violations.push(f.last === null
        ? `room type ${f.rt} ${f.night}: counts without any ledger entry`
        : `room type ${f.rt} ${f.night}: the ledger replays to other counts than the night's (last entry ${f.last})`);
    }
    return { checked: counts.length, violations };
  },
};
