import { checkPayment, type ExpiryOutcome } from '../../shared/usecases/expiry.js';
import type { Deps } from '../../shared/usecases/deps.js';
import type { Harness } from './harness.js';

const genOf = async (h: Harness, bookingId: number): Promise<number> =>
  (await h.sql(`SELECT job_gen FROM booking WHERE id = $1`, [bookingId])).rows[0]?.job_gen ?? 0;

/**
 * The one "make due": a HOLD's deadline and next expiry check moved 1 s into the past (other statuses untouched),
 * and its expiry job, delayed to the old deadline, promoted so it runs now (the reconciler would take over anyway).
 */
export async function makeDue(h: Harness, bookingId: number): Promise<void> {
  await h.sql(
    `UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() - interval '1 second'
     WHERE id = $1 AND status = 'HOLD'`,
    [bookingId],
  );
  await h.deps.producers?.settle(); // the hold's expiry job may still be gathering (added lazily)
  const job = await h.queues.expiry.getJob(`expire-${bookingId}-g${await genOf(h, bookingId)}`).catch(() => undefined);
  await job?.promote().catch(() => {});
}

/**
 * Makes the hold due and decides it right away (with `deps`, default the harness's), as its payment check does:
 * a hold nobody asked to pay is expired, one whose customer did is checked with the provider first. Its next
 * expiry check is moved out of reach meanwhile, so no reconciler pass (the harness's) takes the hold first; the
 * hold's own jobs stay delayed to its old deadline (the harness's HOLD_TTL_S away) and then find it decided.
 */
export async function expireNow(h: Harness, bookingId: number, deps: Deps = h.deps): Promise<ExpiryOutcome> {
  await h.sql(
    `UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() + interval '1 hour'
     WHERE id = $1 AND status = 'HOLD'`,
    [bookingId],
  );
  return checkPayment(deps, { bookingId, gen: await genOf(h, bookingId) });
}
