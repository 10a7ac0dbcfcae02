import { processExpiry, type ExpiryOutcome } from '../../shared/usecases/expiry.js';
import type { Harness } from './harness.js';

/** The one "make due": a HOLD's deadline and next expiry check moved 1 s into the past (other statuses untouched). */
export async function makeDue(h: Harness, bookingId: number): Promise<void> {
  await h.sql(
    `UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() - interval '1 second'
     WHERE id = $1 AND status = 'HOLD'`,
    [bookingId],
  );
}

/**
 * Makes the hold due and runs its expiry check right away (with `deps`, default the harness's). Its next expiry
 * check is moved out of reach meanwhile, so a running expiry loop (the harness's) does not take the hold first and
 * leave this call `lost_race`; an outcome that keeps the hold sets the next check itself.
 */
export async function expireNow(h: Harness, bookingId: number, deps: Parameters<typeof processExpiry>[0] = h.deps): Promise<ExpiryOutcome> {
  await h.sql(
    `UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() + interval '1 hour'
     WHERE id = $1 AND status = 'HOLD'`,
    [bookingId],
  );
  return processExpiry(deps, bookingId);
}
