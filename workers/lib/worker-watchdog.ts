import type { Queue } from 'bullmq';
import { withTimeout } from '../../shared/async.js';
import { logger } from '../../shared/logger.js';

// BullMQ leaves reconnecting to ioredis. After a Redis Cluster master fails over, a Worker can stay up, report
// nothing and take no job while its queue fills (bench:topology saw it on {refunds}; BullMQ #3088, #3185, #4138
// describe the same). The jobs exist, so the reconciler has nothing to re-arm. BullMQ's maintainer advises closing
// such a worker and starting a new one: the watchdog does that. It only reads the queue (counts on the producer's
// connection, not the worker's), so a false alarm costs one worker restart, and its jobs in flight are retried.

/** What a worker did last, as its processor reports it. */
export class WorkerActivity {
  /** When a job last started or finished (ms). */
  lastAt = Date.now();
  /** Until when the handler paused the queue itself (a provider 429): no job starts then, by design. */
  pausedUntil = 0;
  /** Processors running now: with every slot taken the worker is busy, not stuck (a long purge, say). */
  inFlight = 0;

  started(): void {
    this.inFlight++;
    this.lastAt = Date.now();
  }

  finished(): void {
    this.inFlight--;
    this.lastAt = Date.now();
  }

  pauseFor(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms);
  }
}

export interface WatchdogOptions {
  /** How often the queue is looked at (default 10 s). */
  checkMs?: number;
  /** How long jobs must be ready while the worker starts and finishes none (default 60 s: longer than any attempt). */
  stallMs?: number;
}

/** A delayed job counts as ready once it is this far past its time (the worker promotes due jobs itself). */
const OVERDUE_MS = 5_000;
const READ_TIMEOUT_MS = 5_000;

/**
 * Every `checkMs`: when the queue has had jobs ready (waiting, prioritised, or delayed past due) for `stallMs`,
 * it is neither paused (bull-board) nor rate limited, and the worker, with a slot free, started and finished no
 * job all that time, `restart()` replaces the worker. (A healthy worker with a free slot takes a ready job within
 * milliseconds.) Returns the stop function.
 */
export function watchWorker(o: {
  queue: Queue;
  activity: () => WorkerActivity;
  /** The worker's concurrency now. */
  slots: () => number;
  restart: (why: string) => Promise<void>;
} & WatchdogOptions): () => void {
  const checkMs = o.checkMs ?? 10_000;
  const stallMs = o.stallMs ?? 60_000;
  let suspectSince: number | null = null;
  let checking = false;

  async function readyJobs(now: number): Promise<number | null> {
    const [ready, overdue, paused, limitedMs] = await withTimeout(Promise.all([
      o.queue.getJobCountByTypes('wait', 'prioritized'),
      o.queue.getDelayedCount(now - OVERDUE_MS),
      o.queue.isPaused(),
      o.queue.getRateLimitTtl(),
    ]), READ_TIMEOUT_MS, 'watchdog read');
    return paused || limitedMs > 0 ? null : ready + overdue;
  }

  async function check() {
    const now = Date.now();
    const a = o.activity();
    const idleSince = Math.max(a.lastAt, a.pausedUntil);
    if (now - idleSince < checkMs || a.inFlight >= o.slots()) {
      suspectSince = null;
      return;
    }
    // Unreadable (Redis down, a slow answer): suspicion starts over once the queue answers again (the worker may be
    // reconnecting too).
    const ready = await readyJobs(now).catch(() => undefined);
    if (!ready) {
      suspectSince = null;
      return;
    }
    suspectSince ??= now;
    if (now - Math.max(suspectSince, idleSince) < stallMs) return;
    suspectSince = null;
    await o.restart(`${ready} jobs ready and none started or finished for ${Math.round((now - idleSince) / 1000)} s`);
  }

  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    check()
      .catch((err) => logger.error({ queue: o.queue.name, err: String(err) }, 'worker watchdog failed'))
      .finally(() => { checking = false; });
  }, checkMs);
  timer.unref();
  return () => clearInterval(timer);
}
