import { z } from 'zod';
import type { Queue } from 'bullmq';
import { processExpiry } from '../shared/usecases/expiry.js';
import { dueHolds } from '../shared/db/bookings.js';
import { purgeKeys } from '../shared/db/idempotency.js';
import { isEntry, runWorkerProcess, type WorkerDefinition } from './runner.js';

export const EXPIRY_QUEUE = 'expiry';
export const expiryPayload = z.object({ bookingId: z.number().int().positive() }).or(z.object({ sweep: z.literal(true) }));

/** One job per (hold, check time): re-adding the same check is a no-op, a deferred check is a new job. */
export async function scheduleExpiry(queue: Queue, bookingId: number, at: Date, now = Date.now()): Promise<void> {
  await queue.add('expire', { bookingId }, { jobId: `expire-${bookingId}-${at.getTime()}`, delay: Math.max(0, at.getTime() - now) });
}

const SWEEP_EVERY_MS = 1000;
const KEEP_IDEMPOTENCY_KEYS_HOURS = 48;

export const expiryWorker: WorkerDefinition<typeof expiryPayload> = {
  queue: EXPIRY_QUEUE,
  payload: expiryPayload,
  concurrency: 20,
  // A failing check (database down, a bug) retries every ≤ 30 s for days instead of giving up: a job left
  // in the failed set would block the sweeper's re-add (same job id) and the hold would never expire.
  defaultJobOptions: { removeOnComplete: true, removeOnFail: { age: 86_400 }, attempts: 20_000, backoff: { type: 'expiry' } },
  settings: { backoffStrategy: (attemptsMade: number) => Math.min(30_000, 250 * 2 ** Math.max(0, attemptsMade - 1)) },
  async processor(deps, data) {
    const queue = deps.queues[EXPIRY_QUEUE]!;
    if ('sweep' in data) {
      // Safety net for holds whose delayed job was lost (Redis flushed, enqueue failed after commit).
      const now = deps.clock.now();
      const due = await dueHolds(deps.db, now, 1000);
      await Promise.all(due.map((h) => scheduleExpiry(queue, h.id, new Date(h.nextExpiryCheckAt), now.getTime())));
      if (now.getUTCSeconds() === 0 && now.getUTCMilliseconds() < SWEEP_EVERY_MS) await purgeKeys(deps.db, KEEP_IDEMPOTENCY_KEYS_HOURS);
      return { scheduled: due.length };
    }
    const outcome = await processExpiry(deps, data.bookingId);
    if (outcome.kind === 'not_due' || outcome.kind === 'kept') await scheduleExpiry(queue, data.bookingId, outcome.checkAt);
    return outcome;
  },
};

export async function startSweeper(queue: Queue): Promise<void> {
  await queue.upsertJobScheduler('expiry-sweep', { every: SWEEP_EVERY_MS }, { name: 'sweep', data: { sweep: true }, opts: { removeOnComplete: true, removeOnFail: 100, attempts: 1 } });
}

if (isEntry(import.meta.url)) {
  await runWorkerProcess(expiryWorker, [expiryWorker], (deps) => startSweeper(deps.queues[EXPIRY_QUEUE]!));
}
