import type { Invariant } from './types.js';

/**
 * Every succeeded payment (a `payment` row: the service records successes only) confirmed exactly one booking, or
 * has a full refund; and every booking that is or was confirmed (CONFIRMED, ON_TRIP, COMPLETED) has exactly one
 * confirming payment. The refund's own fate is the `refunds` invariant's business.
 */
export const paymentsAccounted: Invariant = {
  name: 'payments-accounted',
  async check({ query }) {
    const payments = await query<{ id: string; booking: string; outcome: string; status: string; fullRefund: boolean }>(`
      SELECT p.id, p.booking_id AS booking, p.outcome, b.status,
             EXISTS (SELECT 1 FROM refund r
                     WHERE r.booking_id = p.booking_id AND r.amount >= p.amount
                       AND (r.payment_id = p.id OR (r.payment_id IS NULL AND r.payment_intent_id = p.payment_intent_id))) AS "fullRefund"
      FROM payment p JOIN booking b ON b.id = p.booking_id`);
    const violations: string[] = [];
    for (const p of payments) {
      if (p.outcome === 'CONFIRMED' && !['CONFIRMED', 'ON_TRIP', 'COMPLETED', 'CANCELLED'].includes(p.status)) {
        violations.push(`payment ${p.id}: confirmed booking ${p.booking}, which is ${p.status}`);
      }
      if (p.outcome === 'REFUNDED' && !p.fullRefund) violations.push(`payment ${p.id} (booking ${p.booking}): kept, no full refund`);
    }
    const confirmed = await query<{ id: string; status: string; n: number }>(`
      SELECT b.id, b.status, count(p.id)::int AS n
      FROM booking b LEFT JOIN payment p ON p.booking_id = b.id AND p.outcome = 'CONFIRMED'
      WHERE b.status IN ('CONFIRMED', 'ON_TRIP', 'COMPLETED')
      GROUP BY b.id, b.status HAVING count(p.id) <> 1`);
    for (const b of confirmed) violations.push(`booking ${b.id}: ${b.status} with ${b.n} confirming payments`);
    return { checked: payments.length, violations };
  },
};
