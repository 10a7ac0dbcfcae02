import type { Deps } from './deps.js';
import { jobIdOf, type JobRequest, type ObligationKind } from '../domain/jobs.js';
import { bumpGeneration, openObligations, overdueObligations, type Obligation } from '../db/obligations.js';
import { tryReconcilerLock } from '../db/reconciler-lock.js';
import { RedisUnavailableError, type JobStore } from '../queues/job-store.js';
import { expireOverdueHolds } from './expiry.js';
import { observeTakeovers } from './jobs.js';
import { noteJob, transact } from './transact.js';

// The reconciler: process code that reads PostgreSQL (the record of what is owed), never a Redis schedule. One pass
// per kind, in each process that works the kind, serialized across processes by an advisory lock:
// 1. expiry only (`takeOver`, on its own timer: it needs no Redis, and must not wait on it): the overdue unpaid
//    holds are expired here and now (their job is late: a dead worker, or Redis unreachable), so a hold expires
//    within 1 s of holdExpiresAt whatever happened to its job;
// 2. the canary (a field of the queue's own meta hash, which FLUSHALL, a restart without persistence and an
//    obliterate all delete): gone means the queue lost its data; every open row's job is added again (its current
//    gen: a Redis that lost the canary retains none of those ids), due soonest first, then the canary is set;
// 3. the overdue probe (one partial-index probe, nothing when all is well, since a job keeps its row's due time in
//    step with its own delay): each overdue row's job is looked up. Missing, or finished while the row is still
//    open (failed, stalled twice) → a new generation (CAS) and a new job; delayed while the row says due → promoted;
//    waiting or active → late, not lost: counted as overdue.
// After an outage it saw, a pass adds every open row's job again (the adds that failed meanwhile).


export interface PassReport {
  /** Another process held the kind's lock: this pass did nothing. */
  skipped: boolean;
  rebuilt: number;
  rearmed: { missing: number; failed: number };
  promoted: number;
  /** Overdue rows whose job exists but has not run yet. */
  late: number;
  redis: 'ok' | 'unreachable';
}

const REBUILD_PAGE = 1000;
const REBUILD_ADDS_IN_FLIGHT = 4;

/** Re-arm delay of a row whose jobs keep ending while it stays open: none for the first three, then 2^gen s (≤ 15 min). */
const rearmDelayMs = (gen: number) => (gen < 3 ? 0 : Math.min(900_000, 1000 * 2 ** Math.min(20, gen)));

export interface Reconciler {
  /** One pass over `kind`; `graceMs`: how late past due a row may be before it counts as overdue. */
  pass(kind: ObligationKind, graceMs: number): Promise<PassReport>;
  /** Expires the unpaid holds overdue by more than `graceMs` (PostgreSQL only); how many. */
  takeOver(graceMs: number): Promise<number>;
}

/** Rows looked at per overdue probe. */
const PROBE = 200;

export function createReconciler(deps: Deps, store: JobStore): Reconciler {
  const outage = new Set<ObligationKind>();
  const withStore = { ...deps, jobs: store };

  /**
   * Adds every open row's job, due soonest first (pages in due order; a few pages' adds in flight at once, the next
   * page read meanwhile); true when every add reached Redis.
   */
  async function rebuild(kind: ObligationKind, report: PassReport): Promise<boolean> {
    let after: Obligation['cursor'] | null = null;
    let ok = true;
    const inFlight = new Set<Promise<void>>();
    for (;;) {
      const page = await openObligations(deps.db, kind, deps.clock.now(), after, REBUILD_PAGE);
      if (page.length > 0) {
        const add: Promise<void> = store.enqueue(page.map(({ cursor: _cursor, ...request }) => request)).then(({ failed }) => {
          ok &&= failed === 0;
          report.rebuilt += page.length - failed;
        }).finally(() => inFlight.delete(add));
        inFlight.add(add);
        if (inFlight.size >= REBUILD_ADDS_IN_FLIGHT) await Promise.race(inFlight);
        after = page.at(-1)!.cursor;
      }
      if (page.length < REBUILD_PAGE) break;
    }
    await Promise.all(inFlight);
    return ok;
  }

  async function repairOverdue(kind: ObligationKind, graceMs: number, report: PassReport): Promise<void> {
    const overdue = await overdueObligations(deps.db, kind, deps.clock.now(), graceMs, PROBE);
    if (overdue.length === 0) return;
    const states = await store.states(kind, overdue.map((x) => jobIdOf(x)));
    const rearm: { o: Obligation; reason: 'missing' | 'failed' }[] = [];
    for (const [i, x] of overdue.entries()) {
      const state = states[i]!;
      if (state === 'missing' || state === 'finished') rearm.push({ o: x, reason: state === 'missing' ? 'missing' : 'failed' });
      else if (state === 'delayed') {
        await store.promote(kind, jobIdOf(x));
        report.promoted++;
      } else report.late++;
    }
    if (rearm.length === 0) return;
    await transact(withStore, async (tx) => {
      for (const { o: x, reason } of rearm) {
        const gen = await bumpGeneration(tx, x, deps.clock.now());
        if (gen === null) continue; // settled or re-armed meanwhile
        const { cursor: _cursor, ...owed } = x;
        const request: JobRequest = { ...owed, gen, runAt: new Date(deps.clock.now().getTime() + rearmDelayMs(gen)) };
        noteJob(tx, request);
        report.rearmed[reason]++;
      }
    });
  }

  return {
    async pass(kind, graceMs) {
      const report: PassReport = { skipped: false, rebuilt: 0, rearmed: { missing: 0, failed: 0 }, promoted: 0, late: 0, redis: 'ok' };
      const locked = await tryReconcilerLock(deps.db, kind, async () => {
        try {
          const intact = await store.hasCanary(kind);
          if (!intact || outage.has(kind)) {
            if (await rebuild(kind, report)) {
              await store.setCanary(kind);
              outage.delete(kind);
            }
          }
          await repairOverdue(kind, graceMs, report);
        } catch (e) {
          if (!isRedisTrouble(e)) throw e;
          report.redis = 'unreachable';
          outage.add(kind);
        }
      });
      report.skipped = !locked;
      return report;
    },
    async takeOver(graceMs) {
      const expired = await expireOverdueHolds(deps, graceMs);
      observeTakeovers(expired);
      return expired.length;
    },
  };
}

/** A Redis error (unreachable, timed out, not ready) rather than a bug or a database error. */
const isRedisTrouble = (e: unknown) => e instanceof RedisUnavailableError;
