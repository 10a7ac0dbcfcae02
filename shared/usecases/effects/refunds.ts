import type { Deps } from '../deps.js';
import type { CommonQueryMethods } from '../../db/pool.js';
import { insertRefund, settleRefund, type NewRefund, type RefundRow } from '../../db/refunds.js';
import { writeEvent } from '../../events/outbox.js';
import { noteJob } from '../transact.js';
import { notify } from './notify.js';

/**
 * Creates a PENDING refund and its refund.requested event, in the caller's transaction. The row is the obligation;
 * its job (refund-{id}-g0) is added once the transaction commits, and pays it.
 */
export async function requestRefund(tx: CommonQueryMethods, now: Date, r: NewRefund): Promise<void> {
  const refund = await insertRefund(tx, r);
  await writeEvent(tx, 'refund.requested', now, {
    bookingId: r.bookingId, refundId: refund.id, amount: r.amount, currency: r.currency, paymentIntentId: r.paymentIntentId, reason: r.reason,
  });
  noteJob(tx, { kind: 'refunds', bookingId: r.bookingId, refundId: refund.id, gen: refund.gen });
}

/**
 * PENDING → SUCCEEDED/FAILED exactly once, with its event (and a SUCCEEDED refund's notifications); false when
 * already settled. Settled by a webhook while its job waits delayed, that job is promoted: it ends now
 * (`already_settled`), so bull-board tells the truth.
 */
export async function settleRefundOnce(
  tx: CommonQueryMethods,
  deps: Pick<Deps, 'clock'>,
  refund: Pick<RefundRow, 'id' | 'bookingId' | 'amount' | 'currency' | 'gen'>,
  status: 'SUCCEEDED' | 'FAILED',
  providerRefundId: string | null,
): Promise<boolean> {
  if (!(await settleRefund(tx, refund.id, status, providerRefundId))) return false;
  const type = status === 'SUCCEEDED' ? 'refund.succeeded' : 'refund.failed';
  const eventId = await writeEvent(tx, type, deps.clock.now(), {
    bookingId: refund.bookingId, refundId: refund.id, amount: refund.amount, currency: refund.currency,
  });
  if (type === 'refund.succeeded') await notify(tx, { type, eventId, bookingId: refund.bookingId });
  noteJob(tx, { kind: 'refunds', bookingId: refund.bookingId, refundId: refund.id, gen: refund.gen, promote: true });
  return true;
}
