import { isEntry } from '../shared/process.js';
import { runLoopProcess } from './loop-process.js';
import { logger } from '../shared/logger.js';
import type { Deps } from '../shared/usecases/deps.js';
import { expireNextDue, type ExpiryOutcome } from '../shared/usecases/expiry.js';
import { cancelIntentsOf } from '../shared/usecases/intent-cancellations.js';
import { deferExpiryCheck } from '../shared/db/bookings.js';
import { claimDueIntentCancellations } from '../shared/db/intent-cancellations.js';
import { expiryLag } from '../shared/metrics/work.js';
import { drainByPolling, type PollOptions } from './wake.js';

// The expiry process: two loops driven by PostgreSQL alone (CONTRACT "Expiry": nothing that must happen depends on
// a job only Redis remembers). Each pass claims what is due — holds whose next_expiry_check_at has come, intents
// owed a cancellation — with FOR UPDATE SKIP LOCKED, so any number of expiry processes share the work without two
// working the same row. Work that outlives its transaction (asking the provider) holds a lease instead of the lock:
// the due time pushed forward, so a killed process's claim comes due again once the lease is over. A hold's
// outcome sets its next check (kept) or clears it (EXPIRED, CONFIRMED).

/** Intent cancellations per claim, and how many are worked at once (provider calls overlap; the pool has 4 connections). */
const BATCH = 50;
const CONCURRENCY = 8;
/** Holds: lanes claiming one hold each at a time (one transaction per hold; more lanes than the pool's 4 connections keep them busy). */
const HOLD_LANES = 8;
/** Checks that ask the provider run beside the lanes (they may wait seconds on it), at most this many at once. */
const MAX_ASKS = 32;
/**
 * Holds: a pass every 25 ms while there is work, backing off to 100 ms idle — a hold is claimed at most ~100 ms
 * after it is due (the contract: expired within 1 s); an idle poll is one probe of a partial index (10/s).
 * Intent cancellations are not that urgent.
 */
const HOLD_POLL: PollOptions = { busyMs: 25, idleMaxMs: 100 };
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

const observe = (outcome: ExpiryOutcome) => {
  if (outcome.kind === 'expired') expiryLag.observe({ pay_requested: String(outcome.payRequested) }, Math.max(0, outcome.lateMs) / 1000);
};

/**
 * The due holds: each pass, HOLD_LANES lanes claim and decide one due hold at a time (`expireNextDue`: SKIP LOCKED,
 * the row lock is the claim) until none is due or a batch is done. A hold whose provider must be asked is leased
 * and its check runs beside the lanes, so a slow or unreachable provider never holds up plain expiries.
 */
export function createHoldExpiry(deps: Deps) {
  const asks = new Set<Promise<void>>();
  const ask = (bookingId: number, check: () => Promise<ExpiryOutcome>) => {
    const p: Promise<void> = check().then(observe, async (err) => {
      logger.warn({ bookingId, err: String(err) }, 'expiry check failed; retried in 1 s');
      // Sooner than the lease: a failed check (the database, a bug) is tried again in a second.
      await deferExpiryCheck(deps.db, bookingId, new Date(deps.clock.now().getTime() + 1000)).catch(() => {});
    }).finally(() => asks.delete(p));
    asks.add(p);
  };
  return {
    async pass(): Promise<{ full: boolean; worked: boolean }> {
      let handled = 0;
      /** Claims and decides one due hold; false when none is due. */
      const step = async () => {
        // While MAX_ASKS checks wait on the provider, only holds nobody asked to pay are claimed (they need no
        // provider): a slow provider with many holds in grace must not delay the plain expiries (within 1 s).
        const r = await expireNextDue(deps, deps.config.EXPIRY_LEASE_S * 1000, { unpaidOnly: asks.size >= MAX_ASKS });
        if (r === null) return false;
        handled++;
        if ('done' in r) observe(r.done);
        else ask(r.bookingId, r.ask);
        return true;
      };
      // An idle pass is one probe, not one per lane: the lanes join only once a first hold was due.
      if (!(await step())) return { full: false, worked: false };
      const lane = async () => {
        while (handled < BATCH && (await step()));
      };
      await Promise.all(Array.from({ length: HOLD_LANES }, lane));
      return { full: handled >= BATCH, worked: true };
    },
    /** The checks still asking the provider. */
    async drain(): Promise<void> {
      while (asks.size) await Promise.all(asks);
    },
  };
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
  const holds = createHoldExpiry(deps);
  const loops = [drainByPolling(() => holds.pass(), HOLD_POLL), drainByPolling(() => cancelDueIntents(deps), INTENT_POLL)];
  return {
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
      await holds.drain();
    },
  };
}

if (isEntry(import.meta.url)) await runLoopProcess('expiry', (deps) => startExpiryLoops(deps));
