import { intentsOf } from './psp.js';
import { mapLimit, type Invariant } from './types.js';

/**
 * Every booking that left HOLD unpaid (EXPIRED, or CANCELLED without a confirming payment) has no payable intent
 * at the provider: each of its intents is `canceled`, or `succeeded` and refunded in full (a refund row for that
 * intent of at least its amount). Asked of the provider per booking: GET /v1/payment_intents?reference={id}.
 */
export const intentsCancelled: Invariant = {
  name: 'intents-cancelled',
  async check({ query, psp }) {
    const bookings = await query<{ id: string }>(`
      SELECT b.id FROM booking b
      WHERE b.status IN ('EXPIRED', 'CANCELLED')
        AND NOT EXISTS (SELECT 1 FROM payment p WHERE p.booking_id = b.id AND p.outcome = 'CONFIRMED')
      ORDER BY b.id`);
    if (!psp) return { checked: 0, violations: [], note: `skipped: PSP_URL not set (${bookings.length} bookings unchecked)` };
    const refunds = await query<{ intent: string; amount: string }>(`
      SELECT payment_intent_id AS intent, max(amount)::text AS amount FROM refund GROUP BY payment_intent_id`);
    const refunded = new Map(refunds.map((r) => [r.intent, Number(r.amount)]));
    const found = await mapLimit(bookings, 8, async (b) => {
      try {
        return (await intentsOf(psp, String(b.id))).flatMap((i) => {
          if (i.status === 'canceled') return [];
          if (i.status === 'succeeded' && (refunded.get(i.id) ?? 0) >= i.amount) return [];
          const what = i.status === 'succeeded' ? 'succeeded and not refunded in full' : `${i.status} (still payable)`;
          return [`booking ${b.id}: intent ${i.id} is ${what}`];
        });
      } catch (e) {
        return [`booking ${b.id}: could not ask the provider (${(e as Error).message})`];
      }
    });
    return { checked: bookings.length, violations: found.flat() };
  },
};
