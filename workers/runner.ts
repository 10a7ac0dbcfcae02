import { Worker, type Job } from 'bullmq';
import { logger } from '../shared/logger.js';
import type { Deps } from '../shared/usecases/deps.js';
import { QUEUES, type JobData, type QueueName, type QueueSpec } from '../shared/queues/registry.js';
import { correlationOf, queueConnection, type Queues } from '../shared/queues/queues.js';
import { withCorrelation } from '../shared/correlation.js';
import { jobDuration, jobFailures } from '../shared/metrics/work.js';

export interface WorkerDeps extends Deps {
  queues: Queues;
}

/** What a queue worker file exports: which registered queue it works and what it does with one job. */
export interface WorkerDefinition<Q extends QueueName = QueueName> {
  queue: Q;
  concurrency: number;
  processor: (deps: WorkerDeps, data: JobData<Q>, job: Job) => Promise<unknown>;
}

/**
 * Works one queue: every job's payload is parsed with the queue's schema before the processor sees it.
 * The one place every job of every queue passes through: its duration and outcome are measured here, and it
 * runs in the correlation (request id) it was enqueued with, so its logs and the events it writes carry it.
 */
export function startWorker<Q extends QueueName>(def: WorkerDefinition<Q>, deps: WorkerDeps): Worker {
  const spec: QueueSpec = QUEUES[def.queue];
  const backoffMs = spec.backoffMs;
  const worker = new Worker(
    def.queue,
    (job) => withCorrelation(correlationOf(job.data), async () => {
      const done = jobDuration.startTimer({ queue: def.queue, name: job.name });
      try {
        const result = await def.processor(deps, spec.payload.parse(job.data) as JobData<Q>, job);
        const seconds = done({ outcome: 'completed' });
        logger.debug({ queue: def.queue, job: job.name, jobId: job.id, ms: Math.round(seconds * 1000), result }, 'job done');
        return result;
      } catch (err) {
        done({ outcome: 'failed' });
        jobFailures.inc({ queue: def.queue });
        throw err;
      }
    }),
    {
      connection: queueConnection(deps.config.REDIS_URL), prefix: deps.config.QUEUE_PREFIX, concurrency: def.concurrency,
      settings: backoffMs ? { backoffStrategy: (attemptsMade: number) => backoffMs(attemptsMade) } : undefined,
    },
  );
  worker.on('failed', (job, err) => logger.warn({ queue: def.queue, jobId: job?.id, requestId: correlationOf(job?.data)?.requestId, attempts: job?.attemptsMade, err: err.message }, 'job failed'));
  worker.on('error', (err) => logger.error({ queue: def.queue, err: err.message }, 'worker error'));
  return worker;
}
