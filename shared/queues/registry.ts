import type { JobsOptions } from 'bullmq';
import { z } from 'zod';

// Every BullMQ queue in one place: its name, the zod shape of its jobs, its job options and retry backoff, and
// the repeatable jobs (schedules) it runs. Its workers, the dashboard and the queue-depth gauges read it from here.
// Only housekeeping is a job: no event sets one off. Work that must happen (expiry, refunds, notifications) is a
// PostgreSQL row worked by a due loop (workers/expiry.ts, workers/due-loop.ts), so that nothing that must happen
// depends on a job only Redis remembers (issue 8).

export const MAINTENANCE_QUEUE = 'maintenance';

export interface QueueSpec {
  payload: z.ZodTypeAny;
  defaultJobOptions: JobsOptions;
  /** For job options `backoff: {type: <queue name>}`: the delay before retry number `attemptsMade`. */
  backoffMs?: (attemptsMade: number) => number;
}

export const QUEUES = {
  /** Housekeeping on a schedule (purging old idempotency keys and long-expired quotes). */
  [MAINTENANCE_QUEUE]: {
    payload: z.object({ task: z.enum(['purge-idempotency-keys', 'purge-quotes']) }),
    defaultJobOptions: { removeOnComplete: true, removeOnFail: 100, attempts: 3, backoff: { type: 'exponential', delay: 10_000 } },
  },
} as const satisfies Record<string, QueueSpec>;

export type QueueName = keyof typeof QUEUES;
export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];
export type JobData<Q extends QueueName> = z.infer<(typeof QUEUES)[Q]['payload']>;

// ---- schedules: repeatable jobs, upserted by the process that works their queue ----

interface ScheduleSpec<Q extends QueueName = QueueName> {
  queue: Q;
  everyMs: number;
  job: { name: string; data: JobData<Q> };
}
const schedule = <Q extends QueueName>(s: ScheduleSpec<Q>) => s;

export const SCHEDULES = {
  'idempotency-purge': schedule({
    queue: MAINTENANCE_QUEUE, everyMs: 3_600_000, job: { name: 'purge-idempotency-keys', data: { task: 'purge-idempotency-keys' } },
  }),
  'quote-purge': schedule({ queue: MAINTENANCE_QUEUE, everyMs: 3_600_000, job: { name: 'purge-quotes', data: { task: 'purge-quotes' } } }),
} as const;
export type ScheduleId = keyof typeof SCHEDULES;
/** A schedule's tick is not retried: the next tick comes soon enough. */
export const SCHEDULED_JOB_OPTIONS: JobsOptions = { removeOnComplete: true, removeOnFail: 100, attempts: 1 };
