import type { Deps } from './deps.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { findRefund, insertRefund, noteRefundAttempt, settleRefund, type NewRefund, type RefundRow } from '../db/refunds.js';
import { writeEvent } from '../events/outbox.js';
import { ProviderRejectedError } from '../psp/client.js';

/** Creates a PENDING refund and its refund.requested event, in the caller's transaction; the refund worker pays it. */
export async function requestRefund(tx: CommonQueryMethods, now: Date, r: NewRefund): Promise<void> {
  const refund = await insertRefund(tx, r);
  await writeEvent(tx, 'refund.requested', now, {
    bookingId: r.bookingId, refundId: refund.id, amount: r.amount, currency: r.currency, paymentIntentId: r.paymentIntentId, reason: r.reason,
  });
}

/** PENDING → SUCCEEDED/FAILED exactly once, with its event; false when already settled. */
export async function settleRefundOnce(
  tx: CommonQueryMethods,
  deps: Pick<Deps, 'clock'>,
  refund: RefundRow,
  status: 'SUCCEEDED' | 'FAILED',
  providerRefundId: string | null,
): Promise<boolean> {
  if (!(await settleRefund(tx, refund.id, status, providerRefundId))) return false;
  await writeEvent(tx, status === 'SUCCEEDED' ? 'refund.succeeded' : 'refund.failed', deps.clock.now(), {
    bookingId: refund.bookingId, refundId: refund.id, amount: refund.amount, currency: refund.currency,
  });
  return true;
}

/** Thrown while the provider has not settled the refund yet: the job retries with backoff. */
export class RefundStillPendingError extends Error {
  override name = 'RefundStillPendingError';
}

export type RefundOutcome = 'SUCCEEDED' | 'FAILED' | 'already_settled' | 'missing';

/**
 * Pays one refund at the provider. The idempotency key refund-{id} makes every retry the same refund.
 * Unreachable provider and `pending` answers throw, so the queue retries with backoff.
 */
export async function payRefund(deps: Deps, refundId: number): Promise<RefundOutcome> {
  const refund = await findRefund(deps.db, refundId);
  if (!refund) return 'missing';
  if (refund.status !== 'PENDING') return 'already_settled';
  let answer;
  try {
    answer = await deps.psp.createRefund(
      { paymentIntentId: refund.paymentIntentId, amount: refund.amount, reference: String(refund.bookingId) },
      `refund-${refund.id}`,
    );
  } catch (e) {
    if (e instanceof ProviderRejectedError) {
      return deps.db.transaction(async (tx) => {
        await noteRefundAttempt(tx, refund.id, { error: `rejected: ${e.status}` });
        return (await settleRefundOnce(tx, deps, refund, 'FAILED', null)) ? 'FAILED' : 'already_settled';
      });
    }
    await noteRefundAttempt(deps.db, refund.id, { error: String((e as Error).message ?? e) });
    throw e;
  }
  if (answer.status === 'pending') {
    await noteRefundAttempt(deps.db, refund.id, { providerRefundId: answer.id });
    throw new RefundStillPendingError(`refund ${refund.id} pending at the provider`);
  }
  const status = answer.status === 'succeeded' ? 'SUCCEEDED' : 'FAILED';
  return deps.db.transaction(async (tx) => {
    await noteRefundAttempt(tx, refund.id, { providerRefundId: answer.id });
    return (await settleRefundOnce(tx, deps, refund, status, answer.id)) ? status : 'already_settled';
  });
}
