import { logger } from '../../shared/logger.js';
import type { Deps } from '../../shared/usecases/deps.js';
import type { JobKind, ObligationKind } from '../../shared/domain/jobs.js';
import { QUEUES } from '../../shared/queues/registry.js';
import { openQueueStore, type QueueStore } from '../../shared/queues/job-store.js';
import { createReconciler, type PassReport } from '../../shared/usecases/reconcile.js';
import { expiryTakeovers, jobsRearmed, obligationsOverdue } from '../../shared/metrics/work.js';

// Runs the reconciler (shared/usecases/reconcile.ts) for each kind a process works, every kind's pass period
// (registry: `reconcile`), and the maintenance schedules' re-upsert. A pass that fails is logged and tried again
// at the next period.

function record(kind: ObligationKind, r: PassReport): void {
  if (r.rebuilt) jobsRearmed.inc({ queue: kind, reason: 'rebuild' }, r.rebuilt);
  if (r.rearmed.missing) jobsRearmed.inc({ queue: kind, reason: 'missing' }, r.rearmed.missing);
  if (r.rearmed.failed) jobsRearmed.inc({ queue: kind, reason: 'failed' }, r.rearmed.failed);
  if (!r.skipped) obligationsOverdue.set({ queue: kind }, r.late);
  const changed = r.rebuilt + r.rearmed.missing + r.rearmed.failed + r.promoted;
  if (changed) logger.info({ queue: kind, ...r }, 'reconciler: jobs armed again from PostgreSQL');
}

export interface ReconcilerLoops {
  store: QueueStore;
  stop(): Promise<void>;
}

/** Starts the passes over `kinds`; `stop` waits for the passes in flight. */
export function startReconciler(deps: Deps, kinds: readonly JobKind[]): ReconcilerLoops {
  const store = openQueueStore(deps.config);
  const reconciler = createReconciler(deps, store);
  let stopped = false;
  const running = new Set<Promise<void>>();
  type Loop = JobKind | 'takeover';
  const timers = new Map<Loop, NodeJS.Timeout>();
  const lastWarn = new Map<Loop, number>();

  const pass = async (kind: Loop) => {
    if (kind === 'takeover') {
      const n = await reconciler.takeOver(QUEUES.expiry.reconcile.graceMs);
      if (n) {
        expiryTakeovers.inc(n);
        logger.info({ expired: n }, 'reconciler: overdue holds expired without their job');
      }
      return;
    }
    if (kind === 'maintenance') {
      const upserted = await store.ensureSchedules().catch(() => []);
      if (upserted.length) logger.info({ upserted }, 'reconciler: maintenance schedules upserted');
      return;
    }
    record(kind, await reconciler.pass(kind, QUEUES[kind].reconcile.graceMs));
  };
  const everyMs = (kind: Loop) => QUEUES[kind === 'takeover' ? 'expiry' : kind].reconcile.everyMs;
  const loop = (kind: Loop) => {
    if (stopped) return;
    const p: Promise<void> = pass(kind).catch((err) => {
      if (Date.now() - (lastWarn.get(kind) ?? 0) > 10_000) {
        lastWarn.set(kind, Date.now());
        logger.warn({ queue: kind, err: String(err) }, 'reconciler pass failed; again at the next one');
      }
    }).finally(() => {
      running.delete(p);
      if (!stopped) timers.set(kind, setTimeout(() => loop(kind), everyMs(kind)));
    });
    running.add(p);
  };
  for (const kind of kinds) loop(kind);
  if (kinds.includes('expiry')) loop('takeover');
  return {
    store,
    async stop() {
      stopped = true;
      for (const t of timers.values()) clearTimeout(t);
      while (running.size) await Promise.allSettled([...running]);
      await store.close();
    },
  };
}
