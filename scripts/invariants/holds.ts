import type { Invariant } from './types.js';

/** No HOLD is older than its holdExpiresAt + PAYMENT_GRACE_S (the database's clock). */
export const holdsExpire: Invariant = {
  name: 'holds-expire',
  async check({ query, graceS }) {
    const [row] = await query<{ checked: number; late: { id: number; over: number }[] }>(`
      SELECT count(*)::int AS checked,
             coalesce(json_agg(json_build_object('id', id, 'over', round(extract(epoch FROM now() - hold_expires_at))) ORDER BY id)
                      FILTER (WHERE hold_expires_at + make_interval(secs => $1) < now()), '[]') AS late
      FROM booking WHERE status = 'HOLD'`, [graceS]);
    return {
      checked: row!.checked,
      violations: row!.late.map((l) => `booking ${l.id}: still HOLD ${l.over} s after holdExpiresAt (grace ${graceS} s)`),
    };
  },
};
