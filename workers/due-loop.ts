import { logger } from '../shared/logger.js';
import { jobDuration, jobFailures } from '../shared/metrics/work.js';
import { drainByPolling } from './wake.js';

// Refunds and notifications are rows in PostgreSQL that come due (next_attempt_at), not BullMQ jobs: a due loop
// claims a batch (FOR UPDATE SKIP LOCKED plus a lease, see shared/db/refunds.ts and notifications.ts), works it and
// polls again. Nothing of it lives in Redis, so a Redis flush or restart loses nothing.

export interface DueLoopOptions<T> {
  /** The queue label of its metrics (job_duration_seconds, job_failures_total), as the BullMQ queue had. */
  name: string;
  /** The job name in its metrics. */
  job: string;
  batch: number;
  /** Claims up to `batch` due rows (leased to this process). */
  claim: (batch: number) => Promise<readonly T[]>;
  /** Works one claimed row; records its own outcome (settled, or due again later). Returns a label for the log. */
  work: (row: T) => Promise<string>;
  busyMs?: number;
  /** The latency of a row that comes due while the loop is idle. */
  idleMaxMs?: number;
}

export function startDueLoop<T>(o: DueLoopOptions<T>) {
  return drainByPolling(async () => {
    const rows = await o.claim(o.batch);
    await Promise.all(rows.map(async (row) => {
      const done = jobDuration.startTimer({ queue: o.name, name: o.job });
      try {
        const outcome = await o.work(row);
        done({ outcome: outcome === 'retry' ? 'failed' : 'completed' });
        if (outcome === 'retry') jobFailures.inc({ queue: o.name });
      } catch (err) {
        // The claim's lease runs out and the row comes due again.
        done({ outcome: 'failed' });
        jobFailures.inc({ queue: o.name });
        logger.error({ queue: o.name, err: String(err) }, 'due row failed; due again when its lease runs out');
      }
    }));
    return { full: rows.length >= o.batch, worked: rows.length > 0 };
  }, { busyMs: o.busyMs ?? 50, idleMaxMs: o.idleMaxMs ?? 500 });
}
