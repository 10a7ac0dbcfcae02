import { sandboxRefunds } from './psp.js';
import type { Invariant } from './types.js';

/** The cap of the retry backoff (CONTRACT.md "Payment provider"): a PENDING refund is tried at least this often. */
const BACKOFF_CAP_S = 3600;

/**
 * Every refund is SUCCEEDED; or PENDING and scheduled; or FAILED by the provider's word.
 * - Scheduled: when the refund table has `next_attempt_at` (the refunds helper of issue 8 may add it), the column is
 *   set; on today's schema (no such column) the refund was attempted within the backoff cap (updated_at < 1 h ago).
 * - The provider's word: the schema records it as `provider_refund_id` set (the provider answered about this very
 *   refund) and `last_error` not `rejected: <status>` (which is how a 4xx on the create call is recorded); with the
 *   sandbox provider the provider's own status of that refund must be `failed`.
 * With the sandbox provider also: no payment intent is refunded more than it was paid (the same refund paid twice).
 */
export const refundsSettled: Invariant = {
  name: 'refunds-settled',
  async check({ query, psp }) {
    const [{ has } = { has: false }] = await query<{ has: boolean }>(`
      SELECT EXISTS (SELECT 1 FROM information_schema.columns
                     WHERE table_schema = current_schema() AND table_name = 'refund' AND column_name = 'next_attempt_at') AS has`);
    const refunds = await query<{ id: string; booking: string; status: string; providerRefundId: string | null; lastError: string | null; scheduled: boolean }>(`
      SELECT id, booking_id AS booking, status, provider_refund_id AS "providerRefundId", last_error AS "lastError",
             ${has ? 'next_attempt_at IS NOT NULL' : `updated_at > now() - make_interval(secs => ${BACKOFF_CAP_S})`} AS scheduled
      FROM refund ORDER BY id`);
    const sandbox = psp ? await sandboxRefunds(psp) : null;
    const providerStatus = new Map(sandbox?.refunds.map((r) => [r.id, r.status]) ?? []);
    const violations: string[] = [];
    for (const r of refunds) {
      if (r.status === 'PENDING' && !r.scheduled) violations.push(`refund ${r.id} (booking ${r.booking}): PENDING and nothing scheduled`);
      if (r.status !== 'FAILED') continue;
      // With the sandbox its own status of the refund is the word; elsewhere what the schema recorded.
      const byWord = r.providerRefundId !== null
        && (sandbox ? providerStatus.get(r.providerRefundId) === 'failed' : !/^rejected/.test(r.lastError ?? ''));
      if (!byWord) violations.push(`refund ${r.id} (booking ${r.booking}): FAILED without the provider saying so (last error: ${r.lastError ?? 'none'})`);
    }
    if (sandbox) {
      const paid = new Map(sandbox.intents.map((i) => [i.id, i.amount]));
      const refunded = new Map<string, number>();
      for (const r of sandbox.refunds) if (r.status !== 'failed') refunded.set(r.paymentIntentId, (refunded.get(r.paymentIntentId) ?? 0) + r.amount);
      for (const [intent, amount] of refunded) {
        const limit = paid.get(intent);
        if (limit !== undefined && amount > limit) violations.push(`intent ${intent}: refunded ${amount} at the provider, paid ${limit} (a refund paid twice)`);
      }
    }
    return {
      checked: refunds.length,
      violations,
      note: `${has ? 'next_attempt_at' : 'no next_attempt_at column: scheduled = attempted within 1 h'}${sandbox ? '; provider cross-checked' : ''}`,
    };
  },
};
