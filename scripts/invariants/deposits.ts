import type { Invariant } from './types.js';

/**
 * The money a booking keeps is its deposit: for every booking confirmed by a payment, the confirming payment minus
 * the refunds made from it (any status: what the service gave back or owes; a FAILED one is refunds-settled's
 * business) equals the booking's deposit while it is CONFIRMED, ON_TRIP or COMPLETED — a change that lowered the
 * deposit refunded exactly the difference, one that would raise it was refused. A CANCELLED booking was never given
 * back more than it paid.
 */
export const depositsBalanced: Invariant = {
  name: 'deposits-balanced',
  async check({ query }) {
    const rows = await query<{ id: string; status: string; deposit: string; paid: string; refunded: string }>(`
      SELECT b.id, b.status, b.deposit_amount::text AS deposit, p.amount::text AS paid,
             coalesce((SELECT sum(r.amount) FROM refund r WHERE r.payment_id = p.id), 0)::text AS refunded
      FROM booking b JOIN payment p ON p.booking_id = b.id AND p.outcome = 'CONFIRMED'
      ORDER BY b.id`);
    const violations: string[] = [];
    for (const r of rows) {
      const kept = Number(r.paid) - Number(r.refunded);
      if (kept < 0) violations.push(`booking ${r.id} (${r.status}): paid ${r.paid}, refunded ${r.refunded} — more than was paid`);
      else if (r.status !== 'CANCELLED' && kept !== Number(r.deposit)) {
        violations.push(`booking ${r.id} (${r.status}): paid ${r.paid} − refunded ${r.refunded} = ${kept}, but its deposit is ${r.deposit}`);
      }
    }
    return { checked: rows.length, violations };
  },
};
