import { z } from 'zod';
import { payRefund } from '../shared/usecases/refunds.js';
import { isEntry, runWorkerProcess, type WorkerDefinition } from './runner.js';

export const REFUNDS_QUEUE = 'refunds';
export const refundPayload = z.object({ refundId: z.number().int().positive() });

/**
 * Derived from the refund.requested event: re-dispatching it adds nothing, while a refund id reused by
 * another database sharing this Redis (a reset, a second deployment) can never hit a finished job.
 */
export const refundJobId = (refundId: number, eventId: string) => `refund-${refundId}-${eventId}`;

/** 1 s, 2 s, 4 s … capped at 5 min: about a day of retries before the job is left failed (and visible). */
export const refundBackoffMs = (attemptsMade: number) => Math.min(300_000, 1000 * 2 ** Math.max(0, attemptsMade - 1));

export const refundsWorker: WorkerDefinition<typeof refundPayload> = {
  queue: REFUNDS_QUEUE,
  payload: refundPayload,
  concurrency: 10,
  defaultJobOptions: { removeOnComplete: { age: 86_400 }, removeOnFail: false, attempts: 300, backoff: { type: 'refund' } },
  settings: { backoffStrategy: (attemptsMade: number) => refundBackoffMs(attemptsMade) },
  processor: (deps, data) => payRefund(deps, data.refundId),
};

if (isEntry(import.meta.url)) await runWorkerProcess(refundsWorker, []);
