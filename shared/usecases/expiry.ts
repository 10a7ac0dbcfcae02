import type { Deps } from './deps.js';
import type { Booking } from '../domain/booking.js';
import { backoffMs } from '../domain/backoff.js';
import { inWords, type JobOutcome } from '../domain/jobs.js';
import {
  claimPaymentCheck, deferExpiryCheck, findBooking, lockOverdueUnpaidHolds, paymentCheckLeaseState, releasePaymentCheck,
} from '../db/bookings.js';
import { ProviderRejectedError, ProviderUnreachableError } from '../psp/client.js';
import { expireLocked, handOverToPaymentCheck, type Expired } from './effects/expiry.js';
import { confirmFromProvider } from './payments.js';
import { transact } from './transact.js';

// CONTRACT "Expiry". A HOLD's expiry job (expire-{id}-g{n}, delayed to holdExpiresAt) expires it when nobody asked
// to pay; when someone did, it hands the hold to its payment check (paycheck-{id}-g{n}), which asks the provider:
// `succeeded` confirms it (the webhook's code path), `processing` or no answer keeps it (re-checked with backoff)
// for up to PAYMENT_GRACE_S, anything else expires it. Expiry and confirmation race on the booking's version: exactly
// one wins. The expiry reconciler expires an overdue unpaid hold itself (expireOverdueHolds) when its job is late.

export type ExpiryOutcome =
  | { kind: 'not_hold' }
  | { kind: 'superseded'; gen: number }
  | { kind: 'not_due'; checkAt: Date }
  | { kind: 'handed_over' }
  | { kind: 'leased'; until: Date }
  | { kind: 'kept'; checkAt: Date; why: 'processing' | 'unreachable' }
  | { kind: 'throttled'; forMs: number }
  | { kind: 'confirmed' }
  | Expired
  | { kind: 'lost_race' };

/** The job's view of its hold: which booking, and the generation in its id. */
export interface HoldJob {
  bookingId: number;
  gen: number;
}

/** Re-check delay while a payment may be in flight: 1 s, 2 s, 4 s … at most 30 s, by the time past expiry. */
export function recheckDelayMs(msPastExpiry: number): number {
  const checksSoFar = 1 + Math.floor(Math.log2(1 + Math.max(0, msPastExpiry) / 1000));
  return backoffMs(checksSoFar, { baseMs: 1000, capMs: 30_000 });
}

/** Why a job does nothing to this hold now, or null when it is a HOLD of the job's generation that is due. */
function notMine(b: Booking | null, job: HoldJob, now: Date): ExpiryOutcome | null {
  if (!b || b.status !== 'HOLD' || !b.holdExpiresAt) return { kind: 'not_hold' };
  if (b.jobGen > job.gen) return { kind: 'superseded', gen: b.jobGen };
  if (now < b.holdExpiresAt) return { kind: 'not_due', checkAt: b.holdExpiresAt };
  return null;
}

/**
 * The expiry job's decision, under the booking's row lock: not due yet (fired early or promoted: its next check is
 * holdExpiresAt), EXPIRED here and now (nobody asked to pay), or handed to its payment check.
 */
export async function decideExpiry(deps: Deps, job: HoldJob): Promise<ExpiryOutcome> {
  return transact(deps, async (tx) => {
    const b = await findBooking(tx, job.bookingId, { forUpdate: true });
    const now = deps.clock.now();
    const skip = notMine(b, job, now);
    if (skip?.kind === 'not_due') await deferExpiryCheck(tx, job.bookingId, skip.checkAt);
    if (skip) return skip;
    if (b!.payRequestedAt) {
      await handOverToPaymentCheck(tx, b!, now);
      return { kind: 'handed_over' };
    }
    return expireLocked(tx, deps, b!);
  });
}

/**
 * The payment check of a HOLD past holdExpiresAt whose customer asked to pay. It claims the hold (a lease, no row
 * lock), asks the provider, and then confirms, keeps or expires it; expiry only if the booking is still the
 * version it saw. A hold nobody asked to pay is simply expired.
 */
export async function checkPayment(deps: Deps, job: HoldJob): Promise<ExpiryOutcome> {
  const b = await findBooking(deps.db, job.bookingId);
  const skip = notMine(b, job, deps.clock.now());
  if (skip) return skip;
  if (!b!.payRequestedAt) return decideExpiry(deps, job);
  const lease = await claimPaymentCheck(deps.db, b!.id, job.gen, deps.config.LEASE_S * 1000);
  if (!lease) {
    const state = await paymentCheckLeaseState(deps.db, b!.id);
    if (!state?.open) return { kind: 'not_hold' };
    if (state.gen > job.gen) return { kind: 'superseded', gen: state.gen };
    return { kind: 'leased', until: state.leaseUntil ?? new Date(deps.clock.now().getTime() + 1000) };
  }
  try {
    return await askThenDecide(deps, b!, lease.token);
  } catch (e) {
    // The database failed mid-check (the provider's answers are handled inside): free the hold for the retry.
    await releasePaymentCheck(deps.db, b!.id, lease.token, 0).catch(() => {});
    throw e;
  }
}

async function askThenDecide(deps: Deps, b: Booking, token: string): Promise<ExpiryOutcome> {
  let keep: 'processing' | 'unreachable' | null = null;
  try {
    const intents = await deps.psp.listPaymentIntents(String(b.id));
    for (const paid of intents.filter((i) => i.status === 'succeeded')) {
      const outcome = await confirmFromProvider(deps, {
        reference: String(b.id), paymentIntentId: paid.id, amount: paid.amount, currency: paid.currency,
        // Keyed on the intent: a webhook of the same payment, before or after, is recognised as the same one.
        providerTxnId: paid.providerTxnId ?? null,
      });
      if (outcome === 'confirmed') return { kind: 'confirmed' };
      // Refunded (wrong amount, …) or already recorded: this success does not keep the hold alive.
    }
    if (intents.some((i) => i.status === 'processing')) keep = 'processing';
  } catch (e) {
    // "Cannot be reached" (connection, timeout, 5xx) keeps a hold; a 429 says "not now" (the queue pauses); any
    // other 4xx says nothing is in flight.
    if (e instanceof ProviderRejectedError && e.status === 429) {
      const forMs = e.retryAfterMs ?? 1000;
      await releasePaymentCheck(deps.db, b.id, token, forMs);
      return { kind: 'throttled', forMs };
    }
    if (e instanceof ProviderUnreachableError) keep = 'unreachable';
    else if (!(e instanceof ProviderRejectedError)) throw e;
  }
  const now = deps.clock.now().getTime();
  const expiresAt = b.holdExpiresAt!.getTime();
  const deadline = expiresAt + deps.config.PAYMENT_GRACE_S * 1000;
  if (keep && now < deadline) {
    const next = Math.min(deadline, now + recheckDelayMs(now - expiresAt));
    await releasePaymentCheck(deps.db, b.id, token, next - now);
    return { kind: 'kept', checkAt: new Date(next), why: keep };
  }
  return transact(deps, async (tx) => {
    const locked = await findBooking(tx, b.id, { forUpdate: true });
    if (!locked || locked.status !== 'HOLD' || locked.version !== b.version) return { kind: 'lost_race' as const };
    return expireLocked(tx, deps, locked);
  });
}

/**
 * The expiry reconciler's take-over: expires (under the row lock, SKIP LOCKED past holds a job is deciding) the
 * unpaid holds overdue by more than `graceMs`. Their job was late: its worker died mid-job, or Redis is unreachable
 * (holds placed while it is down have no job at all). A job that runs later finds EXPIRED and does nothing.
 */
export async function expireOverdueHolds(deps: Deps, graceMs: number, limit = 100): Promise<Expired[]> {
  return transact(deps, async (tx) => {
    const holds = await lockOverdueUnpaidHolds(tx, deps.clock.now(), graceMs, limit);
    const expired: Expired[] = [];
    for (const b of holds) expired.push(await expireLocked(tx, deps, b));
    return expired;
  });
}

/** What an expiry or payment-check job tells BullMQ, and the line it leaves in the job's log. */
export function expiryJobOutcome(o: ExpiryOutcome, now: Date): JobOutcome {
  switch (o.kind) {
    case 'not_due':
      return { kind: 'later', at: o.checkAt, log: `not due yet: checked at holdExpiresAt ${o.checkAt.toISOString()}` };
    case 'leased':
      return { kind: 'later', at: new Date(o.until.getTime() + 100), log: `another check holds the booking until ${o.until.toISOString()}` };
    case 'kept':
      return { kind: 'later', at: o.checkAt, log: `kept: provider ${o.why}; next check ${inWords(o.checkAt.getTime() - now.getTime())}` };
    case 'throttled':
      return { kind: 'paused', forMs: o.forMs, log: `provider answered 429; queue paused ${inWords(o.forMs)}` };
    case 'superseded':
      return { kind: 'done', result: o.kind, log: `superseded by the job of generation ${o.gen}` };
    case 'handed_over':
      return { kind: 'done', result: o.kind, log: 'pay was asked: handed to its payment check (payment-checks queue)' };
    case 'expired':
      return { kind: 'done', result: o.kind, log: `EXPIRED ${o.lateMs} ms after holdExpiresAt` };
    default:
      return { kind: 'done', result: o.kind, log: o.kind === 'confirmed' ? 'provider: succeeded; CONFIRMED' : o.kind };
  }
}
