import type { Deps } from './deps.js';
import { backoffMs } from '../domain/backoff.js';
import { inWords, type JobOutcome } from '../domain/jobs.js';
import { claimRefund, ownedProviderRefundIds, refundLeaseState, releaseRefund, type ClaimedRefund } from '../db/refunds.js';
import { ProviderRejectedError, type Refund } from '../psp/client.js';
import { QUEUES } from '../queues/registry.js';
import { settleRefundOnce } from './effects/refunds.js';
import { transact } from './transact.js';
import { unclaimedOutcome } from './unclaimed.js';

/** The wait before a refund's next attempt after `attempts` failed ones: 1 s, doubling, capped at 1 h (the contract's cap). */
export const refundRetryDelayMs = (attempts: number) => backoffMs(attempts, QUEUES.refunds.backoff);

export type RefundOutcome =
  | { kind: 'SUCCEEDED' | 'FAILED' | 'already_settled' }
  | { kind: 'pending' | 'retry'; inMs: number; answer: string }
  | { kind: 'throttled'; forMs: number; answer: string };

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
 * One attempt at one claimed PENDING refund, at most ONE POST (never retried within the attempt):
 * 1. its provider refund id is known (an answer gave it): GET it;
 * 2. else, if an earlier attempt ran (attempts > 1), look for the refund that attempt may have created, and adopt it;
 * 3. else POST /v1/refunds with the idempotency key refund-{id}.
 * `succeeded`/`failed` settle it (once, with its event); `pending` and every trouble (unreachable, any 4xx) keep it
 * PENDING and due again after the backoff: FAILED only on the provider's word. A 429 with Retry-After keeps it
 * PENDING without counting the attempt (the queue pauses that long).
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
    const error = describe(e);
    if (e instanceof ProviderRejectedError && e.status === 429 && e.retryAfterMs !== null) {
      await releaseRefund(deps.db, claim, { error, retryInMs: e.retryAfterMs, uncount: true });
      return { kind: 'throttled', forMs: e.retryAfterMs, answer: error };
    }
    const inMs = refundRetryDelayMs(claim.attempts);
    await releaseRefund(deps.db, claim, { error, retryInMs: inMs });
    return { kind: 'retry', inMs, answer: error };
  }
  if (answer.status === 'pending') {
    const inMs = refundRetryDelayMs(claim.attempts);
    await releaseRefund(deps.db, claim, { providerRefundId: answer.id, retryInMs: inMs });
    return { kind: 'pending', inMs, answer: `pending (${answer.id})` };
  }
  const status = answer.status === 'succeeded' ? 'SUCCEEDED' : 'FAILED';
  const settled = await transact(deps, (tx) => settleRefundOnce(tx, deps, claim, status, answer.id));
  return { kind: settled ? status : 'already_settled' };
}

/** The refund job (refund-{id}-g{gen}): claims the row, makes one attempt, and tells BullMQ what next. */
export async function runRefundJob(deps: Deps, job: { refundId: number; gen: number }): Promise<JobOutcome> {
  const claim = await claimRefund(deps.db, job.refundId, job.gen, deps.config.LEASE_S * 1000);
  if (!claim) return unclaimedOutcome(await refundLeaseState(deps.db, job.refundId), job.gen, deps.clock.now());
  const o = await payRefund(deps, claim);
  const attempt = `attempt ${claim.attempts}`;
  switch (o.kind) {
    case 'retry':
    case 'pending':
      return { kind: 'retry', inMs: o.inMs, error: `provider: ${o.answer}`, log: `${attempt}: provider ${o.answer}; next attempt ${inWords(o.inMs)}` };
    case 'throttled':
      return { kind: 'paused', forMs: o.forMs, log: `${attempt}: provider ${o.answer}; queue paused ${inWords(o.forMs)} (not counted)` };
    default:
      return { kind: 'done', result: o.kind, log: `${attempt}: ${o.kind}` };
  }
}
