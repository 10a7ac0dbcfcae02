import { Counter, Gauge, Histogram } from 'prom-client';
import { JOB_BUCKETS, LAG_BUCKETS, LATENCY_BUCKETS, processRegistry } from './registry.js';

// Metrics of the work the processes do, observed where it happens (the worker runner, the provider client,
// the outbox pump). Registered once per process; a process that does no such work shows none.
const registers = [processRegistry];

export const jobDuration = new Histogram({
  name: 'job_duration_seconds', help: 'BullMQ job run time by queue, job name and outcome (completed | failed)',
  labelNames: ['queue', 'name', 'outcome'], buckets: JOB_BUCKETS, registers,
});
export const jobFailures = new Counter({
  name: 'job_failures_total', help: 'Failed job attempts by queue (each retry that fails counts)', labelNames: ['queue'], registers,
});
/** Workers the watchdog replaced: their queue had jobs ready and they took none (workers/lib/worker-watchdog.ts). */
export const workerRestarts = new Counter({
  name: 'worker_restarts_total', help: 'Workers replaced by a new one after taking no job while their queue had jobs ready, by queue', labelNames: ['queue'], registers,
});
/** Adds right after a commit that did not reach Redis (the reconciler arms those jobs from PostgreSQL). */
export const jobsEnqueueFailed = new Counter({
  name: 'jobs_enqueue_failed_total', help: 'Job adds after a commit that failed (Redis down or slow); the reconciler arms them', labelNames: ['queue'], registers,
});
/**
 * Jobs the reconciler armed again from PostgreSQL: `missing` (Redis lost it, or an add failed), `failed` (it ended
 * failed while its work is still owed), `rebuild` (the queue's data was lost: FLUSHALL, a restart, an obliterate).
 */
export const jobsRearmed = new Counter({
  name: 'jobs_rearmed_total', help: 'Jobs armed again from PostgreSQL by the reconciler, by queue and reason (missing | failed | rebuild)',
  labelNames: ['queue', 'reason'], registers,
});
/** Overdue rows whose job exists but has not run (a backlog, a paused or rate-limited queue), at the last pass. */
export const obligationsOverdue = new Gauge({
  name: 'obligations_overdue', help: 'Owed work past due (plus its grace) whose job is waiting or delayed, at the reconciler\'s last pass', labelNames: ['queue'], registers,
  // A state, not a count: API workers' metrics are summed (api/metrics.ts) except where an aggregator says otherwise.
  aggregator: 'max',
});
/** Unpaid holds the expiry reconciler expired itself (their job was late: a dead worker, Redis unreachable). */
export const expiryTakeovers = new Counter({
  name: 'expiry_takeovers_total', help: 'Overdue unpaid holds expired by the reconciler instead of their job (a dead worker, Redis down)', registers,
});
/**
 * `pay_requested="false"`: holds nobody tried to pay, due within 1 s of holdExpiresAt (the contract's promise);
 * `"true"`: holds the worker may have kept for up to PAYMENT_GRACE_S while a payment could be in flight.
 */
export const expiryLag = new Histogram({
  name: 'expiry_lag_seconds', help: 'EXPIRED − holdExpiresAt of each hold the expiry worker expired, by whether a payment was asked for',
  labelNames: ['pay_requested'], buckets: LAG_BUCKETS, registers,
});
export const pspDuration = new Histogram({
  name: 'psp_request_duration_seconds',
  help: 'Payment provider calls (retries included) by operation and outcome (ok | rejected | timeout | unreachable)',
  labelNames: ['operation', 'outcome'], buckets: LATENCY_BUCKETS, registers,
});
/** The outbox pump's throughput (relay_published_events_total before the pump). */
export const pumpPublished = new Counter({
  name: 'pump_published_events_total', help: 'Outbox events published to Kafka by the pump, by event type', labelNames: ['type'], registers,
});

/** Reads that could have gone to the read replica (DATABASE_READ_URL) but went to the primary, and why. */
export const dbReadFallbacks = new Counter({
  name: 'db_read_fallbacks_total', help: 'Stale-tolerant reads served by the primary instead of the replica, by reason (lagging | down | error)',
  labelNames: ['reason'], registers,
});
export const dbReplicaLag = new Gauge({
  name: 'db_read_replica_lag_seconds', help: "The read replica's staleness at the last probe (-1: down or unknown)", registers,
  aggregator: 'max',
});

/** Counts a batch of outbox rows by their event type into `counter`. */
export function countByType(counter: Counter<'type'>, rows: readonly { topic: string }[]): void {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.topic, (counts.get(r.topic) ?? 0) + 1);
  for (const [type, n] of counts) counter.inc({ type }, n);
}

/** Car holds written per statement (shared/usecases/car-hold-batches.ts): 1 at low load, more as holds queue up. */
export const carHoldBatchSize = new Histogram({
  name: 'car_hold_batch_size', help: 'Car holds written by one statement (group commit); a fallback to single statements counts each as 1',
  buckets: [1, 2, 4, 8, 16, 32], registers,
});
export const statementBatchSize = new Histogram({
  name: 'statement_batch_size', help: 'Requests served by one shared statement (group commit), by statement; a fallback to single statements counts each as 1',
  labelNames: ['statement'], buckets: [1, 2, 4, 8, 16, 32], registers,
});
