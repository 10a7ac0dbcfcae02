import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import { EVENT_TYPES, NOTIFY_CHANNELS, isNotified } from '../events/topics.js';
import type { PublishedEvent } from '../events/payloads.js';

// Every BullMQ queue in one place: its name, the zod shape of its jobs, its job options and retry
// backoff, the ids its jobs get, and the repeatable jobs (schedules) it runs. Producers (the outbox pump,
// sweeps), workers, the dashboard and the queue-depth gauges all read it from here.

export const REFUNDS_QUEUE = 'refunds';
export const NOTIFICATIONS_QUEUE = 'notifications';
export const MAINTENANCE_QUEUE = 'maintenance';

const id = z.number().int().positive();
/** A schedule's tick: re-create from the database any job Redis lost. */
const sweep = z.object({ sweep: z.literal(true) });

/** 1 s, 2 s, 4 s … capped at 5 min: about a day of retries before the job is left failed (and visible). */
export const refundBackoffMs = (attemptsMade: number) => Math.min(300_000, 1000 * 2 ** Math.max(0, attemptsMade - 1));

interface QueueSpec {
  payload: z.ZodTypeAny;
  defaultJobOptions: JobsOptions;
  /** For job options `backoff: {type: <queue name>}`: the delay before retry number `attemptsMade`. */
  backoffMs?: (attemptsMade: number) => number;
}

export const QUEUES = {
  [REFUNDS_QUEUE]: {
    payload: z.object({ refundId: id }).or(sweep),
    defaultJobOptions: { removeOnComplete: { age: 86_400 }, removeOnFail: false, attempts: 300, backoff: { type: REFUNDS_QUEUE } },
    backoffMs: refundBackoffMs,
  },
  [NOTIFICATIONS_QUEUE]: {
    payload: z.object({ eventId: z.string().uuid(), eventType: z.enum(EVENT_TYPES), bookingId: id, channel: z.enum(NOTIFY_CHANNELS) }),
    defaultJobOptions: { removeOnComplete: { age: 3600 }, removeOnFail: { age: 7 * 86_400 }, attempts: 10, backoff: { type: 'exponential', delay: 1000 } },
  },
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

/**
 * Derived from the refund.requested event: re-dispatching it adds nothing, while a refund id reused by
 * another database sharing this Redis (a reset, a second deployment) can never hit a finished job.
 */
export const refundJobId = (refundId: number, eventId: string) => `refund-${refundId}-${eventId}`;
/** A sweep's re-add: each sweep of a refund still stale (its attempts unchanged) adds one job. */
export const refundSweepJobId = (refundId: number, attempts: number) => `refund-${refundId}-sweep-${attempts}`;
export const notificationJobId = (eventId: string, channel: string) => `notify-${eventId}-${channel}`;

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
  // No job for booking.held: holds expire by the expiry process's PostgreSQL loop (workers/expiry.ts).
  if (e.type === 'refund.requested') {
    jobs.push({ queue: REFUNDS_QUEUE, name: 'refund', data: { refundId: e.refundId }, opts: { jobId: refundJobId(e.refundId, e.eventId) } });
  }
  if (isNotified(e.type) && e.bookingId !== null) {
    for (const channel of NOTIFY_CHANNELS) {
      jobs.push({
        queue: NOTIFICATIONS_QUEUE, name: 'notify', data: { eventId: e.eventId, eventType: e.type, bookingId: e.bookingId, channel },
        opts: { jobId: notificationJobId(e.eventId, channel) },
      });
    }
  }
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
  /** Safety net for PENDING refunds whose job is gone (Redis flushed) or gave up. */
  'refund-sweep': schedule({ queue: REFUNDS_QUEUE, everyMs: 60_000, job: { name: 'sweep', data: { sweep: true } } }),
  'idempotency-purge': schedule({
    queue: MAINTENANCE_QUEUE, everyMs: 3_600_000, job: { name: 'purge-idempotency-keys', data: { task: 'purge-idempotency-keys' } },
  }),
  'quote-purge': schedule({ queue: MAINTENANCE_QUEUE, everyMs: 3_600_000, job: { name: 'purge-quotes', data: { task: 'purge-quotes' } } }),
} as const;
export type ScheduleId = keyof typeof SCHEDULES;
/** A schedule's tick is not retried: the next tick comes soon enough. */
export const SCHEDULED_JOB_OPTIONS: JobsOptions = { removeOnComplete: true, removeOnFail: 100, attempts: 1 };
