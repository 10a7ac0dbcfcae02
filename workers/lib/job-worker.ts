import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { logger } from '../../shared/logger.js';
import type { Deps } from '../../shared/usecases/deps.js';
import { backoffMs } from '../../shared/domain/backoff.js';
import type { JobKind, JobOutcome } from '../../shared/domain/jobs.js';
import { QUEUES, type JobData, type QueueSpec } from '../../shared/queues/registry.js';
import { JOB_HANDLERS, type JobHandler } from '../../shared/usecases/jobs.js';
import { traceparentFor, withCorrelation, type Correlation } from '../../shared/correlation.js';
import { jobDuration, jobFailures } from '../../shared/metrics/work.js';
import { closeRedis, redisClient } from '../../shared/redis.js';
import { withTimeout } from '../../shared/async.js';
import { providerGate } from '../../shared/queues/provider-gate.js';
import type { WorkerActivity } from './worker-watchdog.js';

// Works one queue: the one place every job of every queue passes through. It parses the job's data with the
// queue's schema (bad data: failed, never retried), runs the kind's use case in the correlation (request id) the
// job was added in, writes the attempt's line into the job's log, and turns the use case's outcome into BullMQ's
// terms: completed; delayed (moveToDelayed: no attempt counted); retried after the row's own backoff (the custom
// strategy returns the delay the use case chose); or the whole queue paused (a provider 429: no attempt counted).

/** An attempt that failed, to be retried after `inMs` (the delay the row's next attempt got too). */
export class RetryLater extends Error {
  override name = 'RetryLater';
  constructor(readonly inMs: number, message: string) {
    super(message);
  }
}

/** The custom backoff of every queue: the use case's delay, else (an unexpected error) the queue's own backoff. */
export function backoffStrategy(spec: Pick<QueueSpec, 'backoff'>) {
  return (attemptsMade: number, _type?: string, err?: Error): number => (err instanceof RetryLater ? err.inMs : backoffMs(attemptsMade, spec.backoff));
}


const correlationOf = (data: { requestId?: string; traceparent?: string }): Correlation | undefined =>
  data.requestId ? { requestId: data.requestId, traceparent: data.traceparent ?? traceparentFor(data.requestId) } : undefined;

export interface JobWorkerOptions {
  /** The use case run per job; default the kind's (JOB_HANDLERS). Tests wrap it. */
  handler?: JobHandler<JobKind>;
  /** Concurrency (default the registry's). */
  concurrency?: number;
  /** Told when a job starts or finishes and when the handler pauses the queue (the watchdog reads it). */
  activity?: WorkerActivity;
}

/** Starts working `kind`'s queue; `close()` lets the jobs in flight finish. */
export function startJobWorker<K extends JobKind>(kind: K, deps: Deps, o: JobWorkerOptions = {}): Worker {
  const spec: QueueSpec = QUEUES[kind];
  const handler = (o.handler ?? JOB_HANDLERS[kind]) as JobHandler<K>;
  const connection = redisClient(deps.config, 'worker');
  connection.on('error', () => {});
  const lockMs = deps.config.JOB_LOCK_S * 1000;
  // The queue's provider calls go through its rate gate (PSP_RATE_LIMIT a second across every process).
  const gate = spec.providerLimited && kind !== 'maintenance' ? providerGate(connection, deps.config, kind) : null;
  const jobDeps: Deps = gate ? { ...deps, psp: deps.psp.gated(() => gate.take()) } : deps;

  async function attempt(job: Job, token: string | undefined): Promise<string> {
    o.activity?.started();
    try {
      return await attemptOnce(job, token);
    } finally {
      o.activity?.finished();
    }
  }

  async function attemptOnce(job: Job, token: string | undefined): Promise<string> {
    const parsed = spec.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid job data: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    const data = parsed.data as JobData<K>;
    const done = jobDuration.startTimer({ queue: kind, name: job.name });
    let outcome: JobOutcome;
    try {
      outcome = await handler(jobDeps, data);
    } catch (err) {
      done({ outcome: 'failed' });
      jobFailures.inc({ queue: kind });
      const next = job.attemptsMade + 1 < (job.opts.attempts ?? 1) ? `retried with backoff` : 'no attempts left';
      await job.log(`${new Date().toISOString()} error: ${String((err as Error)?.message ?? err).slice(0, 300)}; ${next}`).catch(() => {});
      throw err;
    }
    await job.log(`${new Date().toISOString()} ${outcome.log}`).catch(() => {});
    done({ outcome: outcome.kind === 'done' ? 'completed' : outcome.kind });
    switch (outcome.kind) {
      case 'done':
        return outcome.result;
      case 'later':
        // The data's due time moves with it (the oldest-waiting gauge measures from it).
        await job.updateData({ ...job.data, dueAt: outcome.at.getTime() });
        await job.moveToDelayed(outcome.at.getTime(), token);
        throw new DelayedError();
      case 'retry':
        jobFailures.inc({ queue: kind });
        await job.updateData({ ...job.data, dueAt: Date.now() + outcome.inMs });
        throw new RetryLater(outcome.inMs, outcome.error);
      case 'paused':
        // The whole queue waits: no job starts (BullMQ's rate limit), and no call of a job already running leaves.
        o.activity?.pauseFor(outcome.forMs);
        await gate?.pause(outcome.forMs);
        await worker.rateLimit(outcome.forMs);
        throw Worker.RateLimitError();
    }
  }

  const worker: Worker = new Worker(
    spec.name,
    (job, token) => withCorrelation(correlationOf(job.data as { requestId?: string }), () => attempt(job, token)),
    {
      // Stored on each job it takes (processedBy): which process worked it, as bull-board shows.
      name: `${deps.config.PROC_NAME ?? spec.process}#${process.pid}`,
      connection, prefix: deps.config.QUEUE_PREFIX, concurrency: o.concurrency ?? spec.concurrency,
      // Job starts toward the provider across every process (in Redis); the gate below holds its calls to the limit.
      limiter: spec.providerLimited ? { max: deps.config.PSP_RATE_LIMIT, duration: 1000 } : undefined,
      lockDuration: lockMs, stalledInterval: lockMs, maxStalledCount: spec.maxStalledCount,
      settings: { backoffStrategy: backoffStrategy(spec) },
    },
  );
  worker.on('failed', (job, err) => {
    if (err instanceof RetryLater) return;
    logger.warn({ queue: kind, jobId: job?.id, attempts: job?.attemptsMade, err: err.message }, 'job failed');
  });
  worker.on('error', (err) => logger.error({ queue: kind, err: err.message }, 'worker error'));
  worker.on('closed', () => closeRedis(connection));
  stuckClosers.set(worker, async (ms) => {
    // Force: the jobs in flight are abandoned (their locks lapse and they are retried). A close that hangs on the
    // stuck connection is cut short: the worker's sockets and this connection are dropped.
    await withTimeout(worker.close(true), ms, 'closing a stuck worker').catch(async () => {
      await worker.disconnect().catch(() => {});
      closeRedis(connection);
    });
  });
  return worker;
}

const stuckClosers = new WeakMap<Worker, (ms: number) => Promise<void>>();

/** Closes a worker the watchdog found stuck, within `ms` however its connections behave. */
export async function closeStuckWorker(worker: Worker, ms: number): Promise<void> {
  await (stuckClosers.get(worker)?.(ms) ?? worker.close(true));
}
