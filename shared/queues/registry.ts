import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { PublishedEvent } from '../events/payloads.js';

// Refunds and notifications are not here: they are rows in PostgreSQL worked by due loops (workers/due-loop.ts),
// so that nothing that must happen depends on a job only Redis remembers (issue 8).
// Every BullMQ queue in one place: its name, the zod shape of its jobs, its job options and retry
// backoff, the ids its jobs get, and the repeatable jobs (schedules) it runs. Producers (the outbox pump,
// sweeps), workers, the dashboard and the queue-depth gauges all read it from here.

export const MAINTENANCE_QUEUE = 'maintenance';

const id = z.number().int().positive();
/** A schedule's tick: re-create from the database any job Redis lost. */
const sweep = z.object({ sweep: z.literal(true) });

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

// ---- job ids: derived from what the job is about, so adding the same job twice adds it once ----

/** A job to add: its queue, name, data and options (the job id among them). */
export interface QueuedJob<Q extends QueueName = QueueName> {
  queue: Q;
  name: string;
  data: JobData<Q>;
  opts: JobsOptions & { jobId: string };
}

// ---- what each committed event asks for: the outbox pump adds these jobs, nothing else decides it ----

/**
 * The jobs an event asks for, with their ids and options. Ids derive from the event (or from what it is about),
 * so adding an event's jobs twice adds them once. `now` places the delayed ones.
 */
export function jobsForEvent(e: PublishedEvent, now: number): QueuedJob[] {
  const jobs: QueuedJob[] = [];
  return jobs;
}

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
