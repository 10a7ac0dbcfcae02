import { payRefund } from '../shared/usecases/refunds.js';
import { stalePendingRefunds } from '../shared/db/refunds.js';
import { isEntry } from '../shared/process.js';
import { REFUNDS_QUEUE } from '../shared/queues/registry.js';
import { reenqueueRefund } from '../shared/queues/queues.js';
import { runWorkerProcess, type WorkerDefinition, type WorkerDeps } from './runner.js';

// A live refund job tries at least every 5 min (the backoff cap); one idle for longer lost its job.
const STALE_AFTER_S = 900;

/** The refund-sweep tick: re-adds a job per PENDING refund nobody has tried for `idleSeconds`. */
export async function sweepStaleRefunds(deps: WorkerDeps, idleSeconds = STALE_AFTER_S): Promise<number> {
  const stale = await stalePendingRefunds(deps.db, idleSeconds, 500);
  await Promise.all(stale.map((r) => reenqueueRefund(deps.queues, r.id, r.attempts)));
  return stale.length;
}

export const refundsWorker: WorkerDefinition<typeof REFUNDS_QUEUE> = {
  queue: REFUNDS_QUEUE,
  concurrency: 10,
  processor: (deps, data) => ('sweep' in data ? sweepStaleRefunds(deps) : payRefund(deps, data.refundId)),
};

if (isEntry(import.meta.url)) await runWorkerProcess(refundsWorker);
