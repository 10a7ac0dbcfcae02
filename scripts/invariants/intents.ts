import { intentsOf } from './psp.js';
import { mapLimit, type Invariant } from './types.js';

/**
 * Every booking that left HOLD unpaid (EXPIRED, or CANCELLED without a confirming payment) has no payable intent
 * at the provider: each of its intents is `canceled`, or `succeeded` and refunded in full (a refund row for that
 * intent of at least its amount). Asked of the provider per booking: GET /v1/payment_intents?reference={id}. So are the
 * intents a change of the deposit superseded (migration 019's superseded_intent), whatever the booking's status.
 */
export const intentsCancelled: Invariant = {
  name: 'intents-cancelled',
  async check({ query, psp }) {
    const [{ has } = { has: false }] = await query<{ has: boolean }>(`
      SELECT EXISTS (SELECT 1 FROM information_schema.tables
                     WHERE table_schema = current_schema() AND table_name = 'superseded_intent') AS has`);
    // Per booking: null = every intent of it; else only the superseded ones.
    const bookings = await query<{ id: string; only: string[] | null }>(`
      SELECT b.id, NULL::text[] AS only FROM booking b
      WHERE b.status IN ('EXPIRED', 'CANCELLED')
        AND NOT EXISTS (SELECT 1 FROM payment p WHERE p.booking_id = b.id AND p.outcome = 'CONFIRMED')
      ${has ? `UNION ALL
      SELECT s.booking_id, array_agg(s.payment_intent_id) FROM superseded_intent s JOIN booking b ON b.id = s.booking_id
      WHERE NOT (b.status IN ('EXPIRED', 'CANCELLED')
                 AND NOT EXISTS (SELECT 1 FROM payment p WHERE p.booking_id = b.id AND p.outcome = 'CONFIRMED'))
      GROUP BY s.booking_id` : ''}
      ORDER BY 1`);
    if (!psp) return { checked: 0, violations: [], note: `skipped: PSP_URL not set (${bookings.length} bookings unchecked)` };
    const refunds = await query<{ intent: string; amount: string }>(`
      SELECT payment_intent_id AS intent, max(amount)::text AS amount FROM refund GROUP BY payment_intent_id`);
    const refunded = new Map(refunds.map((r) => [r.intent, Number(r.amount)]));
    const found = await mapLimit(bookings, 8, async (b) => {
      try {
        return (await intentsOf(psp, String(b.id))).flatMap((i) => {
          if (b.only && !b.only.includes(i.id)) return [];
          if (i.status === 'canceled') return [];
          if (i.status === 'succeeded' && (refunded.get(i.id) ?? 0) >= i.amount) return [];
          const what = i.status === 'succeeded' ? 'succeeded and not refunded in full' : `${i.status} (still payable)`;
          return [`booking ${b.id}: ${b.only ? 'superseded ' : ''}intent ${i.id} is ${what}`];
        });
      } catch (e) {
        return [`booking ${b.id}: could not ask the provider (${(e as Error).message})`];
      }
    });
    return { checked: bookings.length, violations: found.flat() };
  },
};
