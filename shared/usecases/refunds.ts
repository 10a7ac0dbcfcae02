import type { Deps } from './deps.js';
import type { CommonQueryMethods } from '../db/pool.js';
import {
  insertRefund, ownedProviderRefundIds, releaseRefund, settleRefund, type ClaimedRefund, type NewRefund, type RefundRow,
} from '../db/refunds.js';
import { writeEvent } from '../events/outbox.js';
import { ProviderRejectedError, type Refund } from '../psp/client.js';

/**
 * Creates a PENDING refund and its refund.requested event, in the caller's transaction. The row is the obligation:
 * due at once, the refund worker's due loop pays it (no job anywhere else).
 */
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
  refund: Pick<RefundRow, 'id' | 'bookingId' | 'amount' | 'currency'>,
  status: 'SUCCEEDED' | 'FAILED',
  providerRefundId: string | null,
): Promise<boolean> {
  if (!(await settleRefund(tx, refund.id, status, providerRefundId))) return false;
  await writeEvent(tx, status === 'SUCCEEDED' ? 'refund.succeeded' : 'refund.failed', deps.clock.now(), {
    bookingId: refund.bookingId, refundId: refund.id, amount: refund.amount, currency: refund.currency,
  });
  return true;
}

/** The wait before a refund's next pass: 1 s after the first, doubling, capped at 1 h (the contract's cap). */
export const refundRetryDelaySeconds = (attempts: number) => Math.min(3600, 2 ** Math.max(0, attempts - 1));

export type RefundOutcome = 'SUCCEEDED' | 'FAILED' | 'pending' | 'retry' | 'already_settled';

const describe = (e: unknown) =>
  e instanceof ProviderRejectedError ? `rejected: ${e.status} ${JSON.stringify(e.body).slice(0, 200)}` : String((e as Error)?.message ?? e).slice(0, 500);

/**
 * The refund read API (GET /v1/refunds/{id}, GET /v1/refunds?…) is Stripe's, not the contract's: a provider that
 * answers 404/405/501 to it has none, and a refund must still be paid — then the POST with the same idempotency
 * key `refund-{id}` is asked again (the provider's key memory is the only guard left, as the README says).
 */
const lookupUnsupported = (e: unknown) => e instanceof ProviderRejectedError && [404, 405, 501].includes(e.status);
const unlessUnsupported = (e: unknown): null => {
  if (lookupUnsupported(e)) return null;
  throw e;
};

/**
 * The refund an earlier pass may have created though no answer told us (a timeout or 5xx, or a process killed
 * mid-call): the provider's refunds of the same intent, reference and amount that no other refund row owns.
 * Asked before any POST but a refund's first, so a provider that forgot the idempotency key never pays twice.
 */
async function findCreatedEarlier(deps: Deps, claim: ClaimedRefund): Promise<Refund | null> {
  let listed;
  try {
    listed = await deps.psp.listRefunds({ paymentIntentId: claim.paymentIntentId, reference: String(claim.bookingId) });
  } catch (e) {
    // A provider without the (Stripe-like, not in the contract) list API: the POST with the same key is all we have.
    if (lookupUnsupported(e)) return null;
    throw e;
  }
  const candidates = listed.filter((r) => r.paymentIntentId === claim.paymentIntentId && r.amount === claim.amount);
  const owned = await ownedProviderRefundIds(deps.db, candidates.map((r) => r.id));
  return candidates.find((r) => !owned.has(r.id)) ?? null;
}

/**
 * One pass over one claimed PENDING refund, at most ONE POST (never retried within the pass):
 * 1. its provider refund id is known (an answer gave it): GET it;
 * 2. else, if an earlier pass ran (attempts > 1), look for the refund that pass may have created, and adopt it;
 * 3. else POST /v1/refunds with the idempotency key refund-{id}.
 * `succeeded`/`failed` settle it (once, with its event); `pending` and every trouble (unreachable, any 4xx) keep it
 * PENDING and due again after the backoff: FAILED only on the provider's word.
 */
export async function payRefund(deps: Deps, claim: ClaimedRefund): Promise<RefundOutcome> {
  let answer: Refund | null;
  try {
    answer = claim.providerRefundId ? await deps.psp.getRefund(claim.providerRefundId).catch(unlessUnsupported) : null;
    if (!answer && claim.attempts > 1) answer = await findCreatedEarlier(deps, claim);
    answer ??= await deps.psp.createRefund(
      { paymentIntentId: claim.paymentIntentId, amount: claim.amount, reference: String(claim.bookingId) },
      `refund-${claim.id}`,
    );
  } catch (e) {
    await releaseRefund(deps.db, claim, { error: describe(e), retryInSeconds: refundRetryDelaySeconds(claim.attempts) });
    return 'retry';
  }
  if (answer.status === 'pending') {
    await releaseRefund(deps.db, claim, { providerRefundId: answer.id, retryInSeconds: refundRetryDelaySeconds(claim.attempts) });
    return 'pending';
  }
  const status = answer.status === 'succeeded' ? 'SUCCEEDED' : 'FAILED';
  const refund = { id: claim.id, bookingId: claim.bookingId, amount: claim.amount, currency: claim.currency };
  return deps.db.transaction(async (tx) => ((await settleRefundOnce(tx, deps, refund, status, answer.id)) ? status : 'already_settled'));
}
