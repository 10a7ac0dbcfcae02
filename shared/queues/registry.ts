import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import { JOB_RETRY, type Backoff } from '../domain/backoff.js';
import { NOTIFY_CHANNELS } from '../domain/notifications.js';
import type { JobKind } from '../domain/jobs.js';

// Every BullMQ queue in one place (CONTRACT "Jobs"): its name (with a Redis Cluster hash tag, so all of a queue's
// keys share one slot), how bull-board shows it, the Procfile process that works it, the zod shape of its jobs, its
// concurrency, retries and retention. Workers, producers, the reconciler, the dashboard and the metrics read it here.

/** The Procfile processes that work queues. */
export type WorkerProcess = 'expiry' | 'refunds' | 'notifications' | 'maintenance';

export interface QueueSpec {
  /** The BullMQ queue name: the kind in a hash tag (`{refunds}`). */
  name: string;
  displayName: string;
  description: string;
  process: WorkerProcess;
  payload: z.ZodTypeAny;
  /** Jobs one process works at once. */
  concurrency: number;
  /** Calls the payment provider: at most PSP_RATE_LIMIT jobs start per second, across every process. */
  providerLimited: boolean;
  attempts: number;
  backoff: Backoff;
  /** Stalls (a worker died or lost its lock) a job survives before it fails; the reconciler re-arms it then. */
  maxStalledCount: number;
  /**
   * The reconciler's pass period over this kind, and the grace past due before a row counts as overdue: a lost
   * job is noticed within about their sum (expiry: ≈ 0.75 s, within the contract's 1 s; others ≈ 6 s, within 10 s).
   */
  reconcile: { everyMs: number; graceMs: number };
}

/** What every obligation job carries beside its key: when it is due, and the request it was caused by. */
const common = {
  /** ms since the epoch: when the work is due (the oldest-waiting metric measures from it). */
  dueAt: z.number().int(),
  gen: z.number().int().nonnegative(),
  requestId: z.string().max(200).optional(),
  traceparent: z.string().max(55).optional(),
};
const id = z.number().int().positive();
const byBooking = z.object({ bookingId: id, ...common });

/** Maintenance tasks, each on a job scheduler. */
export const MAINTENANCE_TASKS = ['purge-idempotency-keys', 'purge-quotes', 'purge-settled'] as const;
export type MaintenanceTask = (typeof MAINTENANCE_TASKS)[number];

const DAY_S = 86_400;
const HOLDS = { everyMs: 250, graceMs: 500 };
const OTHERS = { everyMs: 1000, graceMs: 5000 };
// Three getJobScheduler calls a pass: cheap enough to be back within a few seconds of Redis losing them.
const MAINTENANCE = { everyMs: 2000, graceMs: 0 };

export const QUEUES = {
  expiry: {
    name: '{expiry}', displayName: 'Hold expiry', process: 'expiry',
    description: 'One job per HOLD, delayed to holdExpiresAt. PostgreSQL row: the booking (next_expiry_check_at). Unpaid: EXPIRED; pay asked: handed to payment checks.',
    payload: byBooking, concurrency: 8, providerLimited: false, attempts: 50, backoff: { baseMs: 250, capMs: 30_000 }, maxStalledCount: 2,
    reconcile: HOLDS,
  },
  'payment-checks': {
    name: '{payment-checks}', displayName: 'Payment checks', process: 'expiry',
    description: 'A hold past holdExpiresAt whose payment may be in flight: asks the provider, re-checks with backoff up to PAYMENT_GRACE_S. PostgreSQL row: the booking.',
    payload: byBooking, concurrency: 8, providerLimited: true, attempts: 50, backoff: { baseMs: 1000, capMs: 30_000 }, maxStalledCount: 1,
    reconcile: HOLDS,
  },
  'intent-cancellations': {
    name: '{intent-cancellations}', displayName: 'Intent cancellations', process: 'expiry',
    description: 'A booking that left HOLD unpaid: every payment intent cancelled at the provider (a succeeded one refunded). PostgreSQL row: intent_cancellation.',
    payload: byBooking, concurrency: 8, providerLimited: true, attempts: 1000, backoff: { baseMs: 1000, capMs: 300_000 }, maxStalledCount: 1,
    reconcile: OTHERS,
  },
  refunds: {
    name: '{refunds}', displayName: 'Refunds', process: 'refunds',
    description: 'One job per refund: paid once at the provider (looked up before any POST again). FAILED only on the provider\'s word. PostgreSQL row: refund.',
    payload: z.object({ bookingId: id, refundId: id, ...common }), concurrency: 10, providerLimited: true, attempts: 1000, backoff: JOB_RETRY, maxStalledCount: 1,
    reconcile: OTHERS,
  },
  notifications: {
    name: '{notifications}', displayName: 'Notifications', process: 'notifications',
    description: 'One job per event and channel (sms, push), sent once with Idempotency-Key {eventId}:{channel}. PostgreSQL row: notification.',
    payload: z.object({ bookingId: id, eventId: z.string().uuid(), channel: z.enum(NOTIFY_CHANNELS), ...common }),
    concurrency: 20, providerLimited: false, attempts: 1000, backoff: JOB_RETRY, maxStalledCount: 1,
    reconcile: OTHERS,
  },
  maintenance: {
    name: '{maintenance}', displayName: 'Maintenance', process: 'maintenance',
    description: 'Purges on job schedulers (idempotency keys, expired quotes, settled rows past RETENTION_DAYS); the reconciler re-upserts a lost schedule.',
    payload: z.object({ task: z.enum(MAINTENANCE_TASKS) }), concurrency: 1, providerLimited: false, attempts: 1, backoff: JOB_RETRY, maxStalledCount: 1,
    reconcile: MAINTENANCE,
  },
} as const satisfies Record<JobKind, QueueSpec>;

export type JobData<K extends JobKind> = z.infer<(typeof QUEUES)[K]['payload']>;

/** The kinds a Procfile process works. */
export const kindsOf = (p: WorkerProcess): JobKind[] => (Object.keys(QUEUES) as JobKind[]).filter((k) => QUEUES[k].process === p);

/** The custom backoff strategy's type name (job options `backoff.type`): the worker's strategy answers it. */
export const OBLIGATION_BACKOFF = 'obligation';

/**
 * Retention (CONTRACT "Jobs"): completed jobs, the last 1,000 per queue (at a few hundred jobs an hour that is well
 * over an hour; at 300 holds/s an hour would be a million jobs); failed ones for 7 days. BullMQ trims lazily, when
 * another job of the queue finishes, so both stay at least that long.
 */
export const KEEP_COMPLETED = { count: 1000 };
export const KEEP_FAILED = { age: 7 * DAY_S };

/** The options every job of `kind` is added with. */
export function jobOptions(kind: JobKind): JobsOptions {
  const q: QueueSpec = QUEUES[kind];
  return {
    attempts: q.attempts, backoff: { type: OBLIGATION_BACKOFF }, removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED,
  };
}

// ---- schedules: the maintenance job schedulers (the reconciler upserts any that Redis lost) ----

export const SCHEDULES = {
  'idempotency-purge': { everyMs: 3_600_000, task: 'purge-idempotency-keys' },
  'quote-purge': { everyMs: 3_600_000, task: 'purge-quotes' },
  retention: { everyMs: 600_000, task: 'purge-settled' },
} as const satisfies Record<string, { everyMs: number; task: MaintenanceTask }>;
export type ScheduleId = keyof typeof SCHEDULES;
export const SCHEDULE_IDS = Object.keys(SCHEDULES) as ScheduleId[];
/** A schedule's tick is not retried: the next tick comes soon enough. */
export const SCHEDULED_JOB_OPTIONS: JobsOptions = { removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED, attempts: 1 };
