import type { Deps } from '../deps.js';
import type { Booking } from '../../domain/booking.js';
import type { CommonQueryMethods } from '../../db/pool.js';
import { deferExpiryCheck, transition } from '../../db/bookings.js';
import { writeEvent } from '../../events/outbox.js';
import { noteJob } from '../transact.js';
import { applyInventoryEffect } from './inventory.js';
import { requireIntentsCancelled } from './intents.js';
import { notify } from './notify.js';

/** A new HOLD's expiry job (expire-{id}-g0), delayed to holdExpiresAt, added once the hold commits. */
export function armHoldExpiry(tx: CommonQueryMethods, bookingId: number, holdExpiresAt: Date): void {
  noteJob(tx, { kind: 'expiry', bookingId, gen: 0, runAt: holdExpiresAt });
}

/**
 * The hold's expiry found a payment may be in flight: its payment check takes over (paycheck-{id}-g{gen}), due now.
 * The row's due time moves to now with it (a job keeps its row's due time in step with its own delay): left at
 * holdExpiresAt, the row would look overdue to the reconciler before the check's add had landed, and a late add
 * (> the 500 ms grace) would cost a needless new generation.
 */
export async function handOverToPaymentCheck(tx: CommonQueryMethods, b: Booking, now: Date): Promise<void> {
  await deferExpiryCheck(tx, b.id, now);
  noteJob(tx, { kind: 'payment-checks', bookingId: b.id, gen: b.jobGen, runAt: now });
}

/** `lateMs`: EXPIRED − holdExpiresAt (the expiry lag); `payRequested`: the hold may have been kept for a payment. */
export interface Expired {
  kind: 'expired';
  lateMs: number;
  payRequested: boolean;
}

/**
 * HOLD → EXPIRED on a booking the caller has locked (and whose version it checked): frees the inventory, writes
 * booking.expired and its notifications and, when a payment was asked for, the obligation to cancel its intents.
 */
export async function expireLocked(tx: CommonQueryMethods, deps: Pick<Deps, 'clock'>, b: Booking): Promise<Expired> {
  await transition(tx, b, 'EXPIRED');
  await applyInventoryEffect(tx, b, 'HOLD', 'EXPIRED', 'system:expiry');
  const now = deps.clock.now();
  await requireIntentsCancelled(tx, b, now);
  const eventId = await writeEvent(tx, 'booking.expired', now, { bookingId: b.id, customerId: b.customerId, kind: b.kind });
  await notify(tx, { type: 'booking.expired', eventId, bookingId: b.id });
  return { kind: 'expired', lateMs: now.getTime() - (b.holdExpiresAt?.getTime() ?? now.getTime()), payRequested: b.payRequestedAt !== null };
}
