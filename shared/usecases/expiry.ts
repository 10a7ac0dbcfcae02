import type { Deps } from './deps.js';
import { deferExpiryCheck, findBooking, lockNextDueHold, transition } from '../db/bookings.js';
import type { Booking } from '../domain/booking.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { writeEvent } from '../events/outbox.js';
import { applyInventoryEffect } from './inventory-effects.js';
import { confirmFromProvider } from './payments.js';
import { requireIntentsCancelled } from './intent-cancellations.js';
import { ProviderRejectedError, ProviderUnreachableError } from '../psp/client.js';

export type ExpiryOutcome =
  | { kind: 'not_hold' }
  | { kind: 'not_due'; checkAt: Date }
  | { kind: 'kept'; checkAt: Date; why: 'processing' | 'unreachable' }
  | { kind: 'confirmed' }
  /** `lateMs`: EXPIRED − holdExpiresAt, for the expiry lag metric (payRequested: the hold may have been kept for a payment). */
  | { kind: 'expired'; lateMs: number; payRequested: boolean }
  | { kind: 'lost_race' };

/** Re-check delay while a payment may be in flight: grows with the time past expiry, 1 s to 30 s. */
export function recheckDelayMs(msPastExpiry: number): number {
  return Math.min(30_000, Math.max(1_000, Math.floor(msPastExpiry / 2)));
}

type Decision = ExpiryOutcome | { ask: Booking; expiresAt: Date };

/**
 * The decision on a HOLD the caller has locked: not due yet, expired here and now (no payment asked for: the common
 * case, one transaction), or "ask the provider first". With `leaseMs` (the expiry loop's claim), a hold whose
 * provider must be asked keeps its claim while the lock is released: its next check is pushed to now + lease, so
 * no other expiry process takes it meanwhile, and it comes due again if this process dies.
 */
async function decideLocked(tx: CommonQueryMethods, deps: Deps, b: Booking | null, leaseMs: number | null): Promise<Decision> {
  // A HOLD always has holdExpiresAt (a table CHECK).
  if (!b || b.status !== 'HOLD' || !b.holdExpiresAt) return { kind: 'not_hold' };
  const now = deps.clock.now();
  if (now < b.holdExpiresAt) {
    if (leaseMs !== null) await deferExpiryCheck(tx, b.id, b.holdExpiresAt);
    return { kind: 'not_due', checkAt: b.holdExpiresAt };
  }
  if (b.payRequestedAt) {
    if (leaseMs !== null) await deferExpiryCheck(tx, b.id, new Date(now.getTime() + leaseMs));
    return { ask: b, expiresAt: b.holdExpiresAt };
  }
  return expireLocked(tx, deps, b);
}

/**
 * Expires a HOLD past holdExpiresAt unless a payment may be in flight. When the customer asked to pay, the
 * provider is asked first: `succeeded` confirms through the webhook's code path, `processing` or no answer keeps
 * the hold (re-checked with backoff: next_expiry_check_at) for up to PAYMENT_GRACE_S past holdExpiresAt.
 */
export async function processExpiry(deps: Deps, bookingId: number): Promise<ExpiryOutcome> {
  const first = await deps.db.transaction(async (tx) => decideLocked(tx, deps, await findBooking(tx, bookingId, { forUpdate: true }), null));
  return 'ask' in first ? askThenExpire(deps, first.ask, first.expiresAt) : first;
}

/**
 * The expiry loop's step: claims the next due HOLD (its next check has come) with FOR UPDATE SKIP LOCKED — any
 * number of expiry processes share the due holds, none waits for or repeats another's — and decides it under that
 * lock. Null when none is due. A hold whose provider must be asked comes back as `ask` (leased, lock released), to
 * be run by the caller without holding up the next claim.
 */
export async function expireNextDue(
  deps: Deps, leaseMs: number, o: { unpaidOnly?: boolean } = {},
): Promise<null | { done: ExpiryOutcome } | { bookingId: number; ask: () => Promise<ExpiryOutcome> }> {
  const first = await deps.db.transaction(async (tx) => {
    const b = await lockNextDueHold(tx, deps.clock.now(), o);
    return b ? decideLocked(tx, deps, b, leaseMs) : null;
  });
  if (first === null) return null;
  return 'ask' in first ? { bookingId: first.ask.id, ask: () => askThenExpire(deps, first.ask, first.expiresAt) } : { done: first };
}

/** A payment may be in flight: asks the provider without holding the lock, then expires only if the booking is still the version seen. */
async function askThenExpire(deps: Deps, b: Booking, expiresAtDate: Date): Promise<ExpiryOutcome> {
  const now = deps.clock.now();
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
    // Only "cannot be reached" (connection, timeout, 5xx) may keep a hold; a 4xx says nothing is in flight.
    if (e instanceof ProviderUnreachableError) keep = 'unreachable';
    else if (!(e instanceof ProviderRejectedError)) throw e;
  }
  const expiresAt = expiresAtDate.getTime();
  const deadline = expiresAt + deps.config.PAYMENT_GRACE_S * 1000;
  if (keep && now.getTime() < deadline) {
    const next = new Date(Math.min(deadline, now.getTime() + recheckDelayMs(now.getTime() - expiresAt)));
    await deferExpiryCheck(deps.db, b.id, next);
    return { kind: 'kept', checkAt: next, why: keep };
  }
  return deps.db.transaction(async (tx) => {
    const locked = await findBooking(tx, b.id, { forUpdate: true });
    if (!locked || locked.status !== 'HOLD' || locked.version !== b.version) return { kind: 'lost_race' as const };
    return expireLocked(tx, deps, locked);
  });
}

/**
 * HOLD → EXPIRED on a booking the caller has locked: frees the inventory, writes booking.expired and, when a
 * payment was asked for, the obligation to cancel its intents.
 */
async function expireLocked(tx: CommonQueryMethods, deps: Deps, b: Booking): Promise<ExpiryOutcome> {
  await transition(tx, b, 'EXPIRED');
  await applyInventoryEffect(tx, b, 'HOLD', 'EXPIRED', 'system:expiry');
  const now = deps.clock.now();
  await requireIntentsCancelled(tx, b, now);
  await writeEvent(tx, 'booking.expired', now, { bookingId: b.id, customerId: b.customerId, kind: b.kind });
  return { kind: 'expired', lateMs: now.getTime() - (b.holdExpiresAt?.getTime() ?? now.getTime()), payRequested: b.payRequestedAt !== null };
}
