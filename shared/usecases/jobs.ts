import type { Deps } from './deps.js';
import type { JobKind, JobOutcome } from '../domain/jobs.js';
import type { JobData } from '../queues/registry.js';
import { expiryLag } from '../metrics/work.js';
import { checkPayment, decideExpiry, expiryJobOutcome, type ExpiryOutcome } from './expiry.js';
import { runIntentCancellationJob } from './intent-cancellations.js';
import { runMaintenanceJob } from './maintenance.js';
import { runNotificationJob } from './notifications.js';
import { runRefundJob } from './refunds.js';

// What each queue's job does: one use case per kind, called with the job's (parsed) data. Workers run these and
// nothing else (workers/lib/job-worker.ts turns the outcome into BullMQ's terms).

export type JobHandler<K extends JobKind> = (deps: Deps, data: JobData<K>) => Promise<JobOutcome>;

const observed = (o: ExpiryOutcome): ExpiryOutcome => {
  if (o.kind === 'expired') expiryLag.observe({ pay_requested: String(o.payRequested) }, Math.max(0, o.lateMs) / 1000);
  return o;
};

export const JOB_HANDLERS: { [K in JobKind]: JobHandler<K> } = {
  expiry: async (deps, d) => expiryJobOutcome(observed(await decideExpiry(deps, d)), deps.clock.now()),
  'payment-checks': async (deps, d) => expiryJobOutcome(observed(await checkPayment(deps, d)), deps.clock.now()),
  'intent-cancellations': (deps, d) => runIntentCancellationJob(deps, d),
  refunds: (deps, d) => runRefundJob(deps, d),
  notifications: (deps, d) => runNotificationJob(deps, d),
  maintenance: (deps, d) => runMaintenanceJob(deps, d.task),
};

/** The expiry lag of holds the reconciler expired itself (their job was late). */
export const observeTakeovers = (expired: readonly { lateMs: number; payRequested: boolean }[]) =>
  expired.forEach((e) => expiryLag.observe({ pay_requested: String(e.payRequested) }, Math.max(0, e.lateMs) / 1000));
