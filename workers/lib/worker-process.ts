import type { Worker } from 'bullmq';
import { parseConfig } from '../../shared/config.js';
import { closeDeps, createDeps, type ProcessDeps } from '../../shared/runtime.js';
import { runProcess } from '../../shared/process.js';
import { kindsOf, type WorkerProcess } from '../../shared/queues/registry.js';
import type { JobKind } from '../../shared/domain/jobs.js';
import { closeStuckWorker, startJobWorker } from './job-worker.js';
import { startReconciler, type ReconcilerLoops } from './reconciler-loop.js';
import { watchWorker, WorkerActivity, type WatchdogOptions } from './worker-watchdog.js';
import { logger } from '../../shared/logger.js';
import { workerRestarts } from '../../shared/metrics/work.js';

/** The workers and the reconciler of some kinds, in one process (or a test). */
export interface RunningWork {
  /** The current worker of each kind, in `kinds` order: the watchdog replaces a stuck one in place. */
  workers: Worker[];
  reconciler: ReconcilerLoops;
  stop(): Promise<void>;
}

/** A stuck worker gets this long to close (force: its jobs in flight are abandoned and retried) before it is dropped. */
const STUCK_CLOSE_MS = 5_000;

/**
 * Works `kinds` (their queues) and runs their reconciler passes; a watchdog per kind replaces a worker that takes
 * no job while its queue has jobs ready (worker-watchdog.ts).
 */
export function startWork(deps: ProcessDeps, kinds: readonly JobKind[], watchdog: WatchdogOptions = {}): RunningWork {
  const workers: Worker[] = [];
  const restarting = new Set<Promise<void>>();
  let stopping = false;
  const reconciler = startReconciler(deps, kinds);
  const unwatch = kinds.map((kind, i) => {
    let activity = new WorkerActivity();
    workers[i] = startJobWorker(kind, deps, { activity });
    // Read on the process's producer connection (else the reconciler's): not the worker's, which may be the stuck part.
    return watchWorker({
      ...watchdog, queue: (deps.producers ?? reconciler.store.producers).queues[kind],
      activity: () => activity, slots: () => workers[i]!.concurrency,
      async restart(why) {
        const stuck = workers[i]!;
        // Not one closed or paused on purpose (a test, a shutdown). One whose run loop ended on an error is stuck too.
        if (stopping || stuck.closing || stuck.isPaused()) return;
        logger.warn({ queue: kind, why }, 'worker replaced: it took no job while its queue had jobs ready');
        workerRestarts.inc({ queue: kind });
        activity = new WorkerActivity();
        workers[i] = startJobWorker(kind, deps, { activity });
        const closing = closeStuckWorker(stuck, STUCK_CLOSE_MS);
        restarting.add(closing);
        await closing.finally(() => restarting.delete(closing));
      },
    });
  });
  return {
    workers, reconciler,
    async stop() {
      stopping = true;
      for (const stop of unwatch) stop();
      await Promise.all(restarting);
      await reconciler.stop();
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}

/**
 * The entry of a Procfile worker process (expiry, refunds, notifications, maintenance): the registry says which
 * queues it works. A graceful stop lets the jobs in flight finish before the pools close.
 */
export async function runWorkerProcess(name: WorkerProcess): Promise<void> {
  await runProcess(name, async () => {
    const config = parseConfig();
    // Pools: a job holds a connection only for its statements; the reconciler's lock holds one while a pass runs.
    const deps = await createDeps(config, { poolSize: name === 'expiry' ? 8 : 4, preparedPoolSize: 1 });
    const work = startWork(deps, kindsOf(name));
    return async () => {
      await work.stop();
      await closeDeps(deps);
    };
  });
}
