import { Registry, collectDefaultMetrics } from 'prom-client';

// Every process's own metrics live in one registry: the work it does (jobs, provider calls, the outbox
// pump's throughput) and Node's process metrics. The api serves it with its HTTP metrics on
// PORT/metrics, the dashboard on DASHBOARD_PORT/metrics, each worker on its METRICS_PORT (server.ts).

export const processRegistry = new Registry();

/** Latency buckets, 2 ms to 10 s (a /pay that retries a slow provider takes ~6 s). */
export const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 7.5, 10];
/** Job buckets: a job may wait on the provider through its retries, so up to 30 s. */
export const JOB_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Expiry lag: the contract wants ≤ 1 s; a hold kept for a payment in flight may go on for PAYMENT_GRACE_S. */
export const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 600];

let collecting = false;
/** Node's default process metrics (CPU, memory, event loop lag, GC …), labelled with the process name. */
export function collectProcessMetrics(proc: string): void {
  if (collecting) return;
  collecting = true;
  collectDefaultMetrics({ register: processRegistry, labels: { proc } });
}
