import type { Worker } from 'bullmq';
import { parseConfig } from '../../shared/config.js';
import { closeDeps, createDeps, type ProcessDeps } from '../../shared/runtime.js';
import { runProcess } from '../../shared/process.js';
import { kindsOf, type WorkerProcess } from '../../shared/queues/registry.js';
import type { JobKind } from '../../shared/domain/jobs.js';
import { startJobWorker } from './job-worker.js';
import { startReconciler, type ReconcilerLoops } from './reconciler-loop.js';

/** The workers and the reconciler of some kinds, in one process (or a test). */
export interface RunningWork {
  workers: Worker[];
  reconciler: ReconcilerLoops;
  stop(): Promise<void>;
}

/** Works `kinds` (their queues) and runs their reconciler passes. */
export function startWork(deps: ProcessDeps, kinds: readonly JobKind[]): RunningWork {
  const workers = kinds.map((k) => startJobWorker(k, deps));
  const reconciler = startReconciler(deps, kinds);
  return {
    workers, reconciler,
    async stop() {
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
