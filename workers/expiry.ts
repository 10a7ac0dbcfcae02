import { processExpiry } from '../shared/usecases/expiry.js';
import { dueHolds } from '../shared/db/bookings.js';
import { isEntry } from '../shared/process.js';
import { EXPIRY_QUEUE } from '../shared/queues/registry.js';
import { scheduleExpiry } from '../shared/queues/queues.js';
import { expiryLag } from '../shared/metrics/work.js';
import { runWorkerProcess, type WorkerDefinition, type WorkerDeps } from './runner.js';

/** The expiry-sweep tick: re-adds the check of every due hold (same job id, so nothing runs twice). */
export async function sweepDueHolds(deps: WorkerDeps): Promise<number> {
  const now = deps.clock.now();
  const due = await dueHolds(deps.db, now, 1000);
  await Promise.all(due.map((h) => scheduleExpiry(deps.queues, h.id, h.nextExpiryCheckAt, now.getTime())));
  return due.length;
}

export const expiryWorker: WorkerDefinition<typeof EXPIRY_QUEUE> = {
  queue: EXPIRY_QUEUE,
  concurrency: 20,
  async processor(deps, data) {
    if ('sweep' in data) return { scheduled: await sweepDueHolds(deps) };
    const outcome = await processExpiry(deps, data.bookingId);
    if (outcome.kind === 'not_due' || outcome.kind === 'kept') await scheduleExpiry(deps.queues, data.bookingId, outcome.checkAt);
    if (outcome.kind === 'expired') expiryLag.observe({ pay_requested: String(outcome.payRequested) }, Math.max(0, outcome.lateMs) / 1000);
    return outcome;
  },
};

if (isEntry(import.meta.url)) await runWorkerProcess(expiryWorker);
