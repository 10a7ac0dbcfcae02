import { z } from 'zod';
import type { Queue } from 'bullmq';
import { payRefund } from '../shared/usecases/refunds.js';
import { stalePendingRefunds } from '../shared/db/refunds.js';
import { isEntry, runWorkerProcess, type WorkerDefinition, type WorkerDeps } from './runner.js';

export const REFUNDS_QUEUE = 'refunds';
export const refundPayload = z.object({ refundId: z.number().int().positive() }).or(z.object({ sweep: z.literal(true) }));

/**
 * Derived from the refund.requested event: re-dispatching it adds nothing, while a refund id reused by
 * another database sharing this Redis (a reset, a second deployment) can never hit a finished job.
 */
export const refundJobId = (refundId: number, eventId: string) => `refund-${refundId}-${eventId}`;

/** 1 s, 2 s, 4 s … capped at 5 min: about a day of retries before the job is left failed (and visible). */
export const refundBackoffMs = (attemptsMade: number) => Math.min(300_000, 1000 * 2 ** Math.max(0, attemptsMade - 1));

// A live refund job tries at least every 5 min (the backoff cap); one idle for longer lost its job.
const STALE_AFTER_S = 900;
const SWEEP_EVERY_MS = 60_000;

/**
 * Safety net for refunds whose job is gone (Redis flushed) or gave up: re-adds a job per stale PENDING
 * refund. The id includes the attempt count, so each sweep of a still-stale refund adds one new job.
 */
export async function sweepStaleRefunds(deps: WorkerDeps, idleSeconds = STALE_AFTER_S): Promise<number> {
  const stale = await stalePendingRefunds(deps.db, idleSeconds, 500);
  const queue = deps.queues[REFUNDS_QUEUE]!;
  await Promise.all(stale.map((r) => queue.add('refund', { refundId: r.id }, { jobId: `refund-${r.id}-sweep-${r.attempts}`, removeOnComplete: true, removeOnFail: true })));
  return stale.length;
}

export const refundsWorker: WorkerDefinition<typeof refundPayload> = {
  queue: REFUNDS_QUEUE,
  payload: refundPayload,
  concurrency: 10,
  defaultJobOptions: { removeOnComplete: { age: 86_400 }, removeOnFail: false, attempts: 300, backoff: { type: 'refund' } },
  settings: { backoffStrategy: (attemptsMade: number) => refundBackoffMs(attemptsMade) },
  processor: (deps, data) => ('sweep' in data ? sweepStaleRefunds(deps) : payRefund(deps, data.refundId)),
};

export async function startRefundSweeper(queue: Queue): Promise<void> {
  await queue.upsertJobScheduler('refund-sweep', { every: SWEEP_EVERY_MS }, { name: 'sweep', data: { sweep: true }, opts: { removeOnComplete: true, removeOnFail: 100, attempts: 1 } });
}

if (isEntry(import.meta.url)) {
  await runWorkerProcess(refundsWorker, [refundsWorker], (deps) => startRefundSweeper(deps.queues[REFUNDS_QUEUE]!));
}
