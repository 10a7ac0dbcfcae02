import type { Channel } from './notifications.js';

// Jobs, in the domain's words. The obligation is a PostgreSQL row (a HOLD, a PENDING refund, an unsent
// notification, an open intent cancellation); its job is the BullMQ projection of it: schedule, execution and the
// record an operator sees. A job's id is its kind, its business key and the row's generation (`gen`, the row's
// job_gen column): `refund-42-g0`. A gen only grows, and a new one is written only when a new job must replace one
// that is gone or finished, so a re-armed job never meets an id Redis still retains (BullMQ ignores an add whose
// id exists in any state).

/** The kinds of work, one BullMQ queue each (CONTRACT "Jobs"). */
export const JOB_KINDS = ['expiry', 'payment-checks', 'intent-cancellations', 'refunds', 'notifications', 'maintenance'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
/** The kinds whose jobs are obligations (maintenance runs on job schedulers instead). */
export type ObligationKind = Exclude<JobKind, 'maintenance'>;
export const OBLIGATION_KINDS = JOB_KINDS.filter((k): k is ObligationKind => k !== 'maintenance');

/** The job an obligation owes, as an effect notes it: which row, which generation, and when it is due. */
export type JobRequest = (
  | { kind: 'expiry' | 'payment-checks' | 'intent-cancellations'; bookingId: number }
  | { kind: 'refunds'; bookingId: number; refundId: number }
  | { kind: 'notifications'; bookingId: number; eventId: string; channel: Channel }
) & {
  gen: number;
  /** When the work is due (the row's due column); absent or past: now. */
  runAt?: Date;
  /** The row was re-opened or settled while its job may wait delayed: promote it, so it runs (or ends) now. */
  promote?: boolean;
};

/** The business key in a job id: the booking, the refund, or the event and channel. */
export function jobKeyOf(r: JobRequest): string {
  switch (r.kind) {
    case 'refunds':
      return String(r.refundId);
    case 'notifications':
      return `${r.eventId}-${r.channel}`;
    default:
      return String(r.bookingId);
  }
}

/** The id prefix of each kind (the contract: "a job's id carries its kind and business key"). */
export const JOB_ID_PREFIX: Record<ObligationKind, string> = {
  expiry: 'expire',
  'payment-checks': 'paycheck',
  'intent-cancellations': 'cancel-intents',
  refunds: 'refund',
  notifications: 'notify',
};

/** `{kind}-{key}-g{gen}`: never an integer, never a `:` (both refused by BullMQ), distinct per kind, key and gen. */
export const jobIdOf = (r: JobRequest): string => `${JOB_ID_PREFIX[r.kind]}-${jobKeyOf(r)}-g${r.gen}`;

/**
 * What a handler did with one attempt, for the worker to tell BullMQ (the use cases know no BullMQ):
 * - `done`: the work is finished or nothing is owed any more (completed);
 * - `later`: not due, kept for a payment in flight, or leased by another claimer: delayed until `at`, no attempt
 *   counted (the row's due column says the same time);
 * - `retry`: the attempt failed (the provider unreachable, refused, pending): retried after `inMs`, an attempt
 *   counted (the row's next attempt says the same time);
 * - `paused`: the provider answered 429 with Retry-After: the whole queue pauses `forMs`, no attempt counted.
 * `log` is the line the attempt leaves in the job's log: the outcome, the provider's answer, the next attempt.
 */
export type JobOutcome =
  | { kind: 'done'; result: string; log: string }
  | { kind: 'later'; at: Date; log: string }
  | { kind: 'retry'; inMs: number; error: string; log: string }
  | { kind: 'paused'; forMs: number; log: string };

/** "in 2 s", "in 1.5 min", for job logs. */
export function inWords(ms: number): string {
  if (ms < 1000) return `in ${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `in ${Math.round(ms / 100) / 10} s`;
  return `in ${Math.round(ms / 6000) / 10} min`;
}
