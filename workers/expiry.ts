import { parseConfig } from '../shared/config.js';
import { createDeps } from '../shared/runtime.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import type { Deps } from '../shared/usecases/deps.js';
import { processExpiry } from '../shared/usecases/expiry.js';
import { cancelIntentsOf } from '../shared/usecases/intent-cancellations.js';
import { claimDueHolds, deferExpiryCheck } from '../shared/db/bookings.js';
import { claimDueIntentCancellations } from '../shared/db/intent-cancellations.js';
import { expiryLag } from '../shared/metrics/work.js';
import { drainByPolling, type PollOptions } from './wake.js';

// The expiry process: two loops driven by PostgreSQL alone (CONTRACT "Expiry": nothing that must happen depends on
// a job only Redis remembers). Each pass claims what is due — holds whose next_expiry_check_at has come, intents
// owed a cancellation — with FOR UPDATE SKIP LOCKED and a lease (the due time pushed forward), so any number of
// expiry processes share the work without two working the same row, and a killed process's claims come due again
// once their lease is over. A hold's outcome sets its next check (kept) or clears it (EXPIRED, CONFIRMED).

/** Rows per claim, and how many are worked at once (provider calls overlap; the pool has 4 connections). */
const BATCH = 50;
const CONCURRENCY = 8;
/**
 * Holds: a pass every 50 ms while there is work, backing off to 200 ms idle — a hold is seen at most ~200 ms after
 * it is due (the contract: expired within 1 s). Intent cancellations are not that urgent.
 */
const HOLD_POLL: PollOptions = { busyMs: 50, idleMaxMs: 200 };
const INTENT_POLL: PollOptions = { busyMs: 100, idleMaxMs: 1000 };

/** Runs `work` on every item, `limit` at a time; one item's failure is logged and does not stop the others. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item).catch((err) => logger.warn({ err: String(err) }, 'expiry: an item failed; its lease brings it back'));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** One pass over the due holds: claim, then check each (expire, keep, or confirm). */
export async function expireDueHolds(deps: Deps): Promise<{ full: boolean; worked: boolean }> {
  const ids = await claimDueHolds(deps.db, deps.clock.now(), deps.config.EXPIRY_LEASE_S * 1000, BATCH);
  await eachLimited(ids, CONCURRENCY, async (id) => {
    try {
      const outcome = await processExpiry(deps, id);
      if (outcome.kind === 'expired') expiryLag.observe({ pay_requested: String(outcome.payRequested) }, Math.max(0, outcome.lateMs) / 1000);
      // Claimed before its deadline (its next check was moved earlier by hand): checked again at the deadline, not after the lease.
      if (outcome.kind === 'not_due') await deferExpiryCheck(deps.db, id, outcome.checkAt);
    } catch (err) {
      // A failed check (the database or a bug) is tried again in a second rather than after the whole lease.
      await deferExpiryCheck(deps.db, id, new Date(deps.clock.now().getTime() + 1000)).catch(() => {});
      throw err;
    }
  });
  return { full: ids.length === BATCH, worked: ids.length > 0 };
}

/** One pass over the due intent cancellations. */
export async function cancelDueIntents(deps: Deps): Promise<{ full: boolean; worked: boolean }> {
  const claims = await claimDueIntentCancellations(deps.db, deps.clock.now(), deps.config.EXPIRY_LEASE_S * 1000, BATCH);
  await eachLimited(claims, CONCURRENCY, async (claim) => {
    const outcome = await cancelIntentsOf(deps, claim);
    if (outcome.kind === 'retry') logger.warn({ bookingId: claim.bookingId, attempts: claim.attempts + 1, err: outcome.error }, 'intent cancellation: will retry');
  });
  return { full: claims.length === BATCH, worked: claims.length > 0 };
}

/** Starts both loops; `stop` lets the passes in flight finish. */
export function startExpiryLoops(deps: Deps) {
  const loops = [drainByPolling(() => expireDueHolds(deps), HOLD_POLL), drainByPolling(() => cancelDueIntents(deps), INTENT_POLL)];
  return {
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
}

if (isEntry(import.meta.url)) {
  await runProcess('expiry', async () => {
    const deps = await createDeps(parseConfig());
    const loops = startExpiryLoops(deps);
    return async () => {
      await loops.stop();
      await deps.db.end();
      await deps.prepared.end();
    };
  });
}
