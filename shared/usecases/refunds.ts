import type { Deps } from './deps.js';
import { backoffMs } from '../domain/backoff.js';
import { inWords, type JobOutcome } from '../domain/jobs.js';
import { claimRefund, fenceRefundPost, ownedProviderRefundIds, refundLeaseState, releaseRefund, type ClaimedRefund } from '../db/refunds.js';
import { ProviderRejectedError, ProviderUnreachableError, RequestNotSent, type Refund } from '../psp/client.js';
import { QUEUES } from '../queues/registry.js';
import { settleRefundOnce } from './effects/refunds.js';
import { transact } from './transact.js';
import { unclaimedOutcome } from './unclaimed.js';

/** The wait before a refund's next attempt after `attempts` failed ones: 1 s, doubling, capped at 1 h (the contract's cap). */
export const refundRetryDelayMs = (attempts: number) => backoffMs(attempts, QUEUES.refunds.backoff);

export type RefundOutcome =
  | { kind: 'SUCCEEDED' | 'FAILED' | 'already_settled' }
  /** The POST could not leave (the claim's lease ran out: another attempt may hold the row): nothing sent or recorded. */
  | { kind: 'not_sent'; why: string }
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
 * The refund an earlier POST may have created though no answer told us (a timeout or 5xx, or a process killed
 * mid-call): the provider's refunds of the same intent, reference and amount that no other refund row owns.
 * Asked before every POST once one may have been sent (posted_at), so a provider that forgot the idempotency key
 * never pays twice.
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
  const owned = await ownedProviderRefundIds(deps.db, candidates.map((r) => r.id), claim.id);
  return candidates.find((r) => !owned.has(r.id)) ?? null;
}

/**
 * One attempt at one claimed PENDING refund, at most ONE POST (never retried within the attempt):
 * 1. its provider refund id is known (an answer gave it): GET it;
 * 2. else, if a POST may have been sent before (posted_at), look for the refund it may have created, and adopt it;
 * 3. else POST /v1/refunds with the idempotency key refund-{id}.
 * `succeeded`/`failed` settle it (once, with its event); `pending` and every trouble (unreachable, any 4xx) keep it
 * PENDING and due again after the backoff: FAILED only on the provider's word. A 429 with Retry-After keeps it
 * PENDING without counting the attempt (the queue pauses that long).
 *
 * Paid once, even with the idempotency key forgotten, because no two POSTs of a refund ever overlap and none
 * follows another unlooked-for:
 * - the POST leaves only under a live claim: right before it leaves (after the rate gate), fenceRefundPost checks
 *   that this attempt still holds the row, records posted_at and renews the lease to LEASE_S, in one statement.
 *   An attempt whose lease ran out meanwhile (slow lookups, a long gate wait, a stalled process, BullMQ handing
 *   its job to another worker) sends nothing: the attempt that claimed the row after it does the work;
 * - a POST that got no answer (a timeout, a connection lost, the process killed) keeps the row leased until that
 *   renewed lease ends, so the next attempt looks (step 2) only once the provider has had LEASE_S to carry the POST
 *   out (LEASE_S must outlast how late a provider may carry out a request; config.ts). One it answered (a 5xx too)
 *   it is done with: the next attempt, after the usual backoff, finds its refund if it made one.
 */
export async function payRefund(deps: Deps, claim: ClaimedRefund): Promise<RefundOutcome> {
  const leaseMs = deps.config.LEASE_S * 1000;
  let answer: Refund | null;
  /** performance.now() when the fence renewed the lease (to leaseMs) and the POST left; null: no POST sent. */
  let postedAt: number | null = null;
  try {
    answer = claim.providerRefundId ? await deps.psp.getRefund(claim.providerRefundId).catch(unlessUnsupported) : null;
    if (!answer && claim.postedAt !== null) answer = await findCreatedEarlier(deps, claim);
    answer ??= await deps.psp.createRefund(
      { paymentIntentId: claim.paymentIntentId, amount: claim.amount, reference: String(claim.bookingId) },
      `refund-${claim.id}`,
      {
        beforeSend: async () => {
          const lease = await fenceRefundPost(deps.db, claim, leaseMs);
          if (!lease) throw new RequestNotSent(`refund ${claim.id}: its claim no longer holds the row (lease run out, or settled)`);
          postedAt = performance.now();
        },
      },
    );
  } catch (e) {
    if (e instanceof RequestNotSent) return { kind: 'not_sent', why: e.message };
    const error = describe(e);
    if (e instanceof ProviderRejectedError && e.status === 429 && e.retryAfterMs !== null) {
      await releaseRefund(deps.db, claim, { error, retryInMs: e.retryAfterMs, uncount: true });
      return { kind: 'throttled', forMs: e.retryAfterMs, answer: error };
    }
    // A POST that left and got no answer may yet be carried out by the provider: the row stays leased.
    const unknown = postedAt !== null && e instanceof ProviderUnreachableError && e.unanswered;
    const leaseLeftMs = unknown ? leaseMs - (performance.now() - postedAt!) + 100 : 0;
    const inMs = Math.max(refundRetryDelayMs(claim.attempts), Math.round(leaseLeftMs));
    await releaseRefund(deps.db, claim, { error, retryInMs: inMs, keepLease: unknown });
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
    case 'not_sent': {
      // Whoever holds the row now does the work; this job waits for its lease, or ends if the row is settled.
      const next = unclaimedOutcome(await refundLeaseState(deps.db, job.refundId), job.gen, deps.clock.now());
      return { ...next, log: `${attempt}: POST not sent (${o.why}); ${next.log}` };
    }
    case 'retry':
    case 'pending':
      return { kind: 'retry', inMs: o.inMs, error: `provider: ${o.answer}`, log: `${attempt}: provider ${o.answer}; next attempt ${inWords(o.inMs)}` };
    case 'throttled':
      return { kind: 'paused', forMs: o.forMs, log: `${attempt}: provider ${o.answer}; queue paused ${inWords(o.forMs)} (not counted)` };
    default:
      return { kind: 'done', result: o.kind, log: `${attempt}: ${o.kind}` };
  }
}
