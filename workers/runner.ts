import { pathToFileURL } from 'node:url';
import { Queue, Worker, type Job, type JobsOptions, type WorkerOptions } from 'bullmq';
import type { z, ZodTypeAny } from 'zod';
import { parseConfig, type Config } from '../shared/config.js';
import { createDeps, onShutdown, queueConnection } from '../shared/runtime.js';
import { logger } from '../shared/logger.js';
import type { Deps } from '../shared/usecases/deps.js';

/** What every queue worker file exports: its queue, the shape of its jobs and what it does with one. */
export interface WorkerDefinition<S extends ZodTypeAny> {
  queue: string;
  payload: S;
  concurrency: number;
  defaultJobOptions: JobsOptions;
  settings?: WorkerOptions['settings'];
  processor: (deps: WorkerDeps, data: z.infer<S>, job: Job) => Promise<unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyWorkerDefinition = WorkerDefinition<any>;

export interface WorkerDeps extends Deps {
  queues: Queues;
}

/** Producers for every queue, sharing one connection per process. */
export type Queues = Record<string, Queue>;

export function openQueues(config: Config, definitions: readonly AnyWorkerDefinition[]): Queues {
  const connection = queueConnection(config.REDIS_URL);
  return Object.fromEntries(
    definitions.map((d) => [d.queue, new Queue(d.queue, { connection, prefix: config.QUEUE_PREFIX, defaultJobOptions: d.defaultJobOptions })]),
  );
}

export function startWorker<S extends ZodTypeAny>(def: WorkerDefinition<S>, deps: WorkerDeps): Worker {
  const worker = new Worker(
    def.queue,
    async (job) => def.processor(deps, def.payload.parse(job.data), job),
    { connection: queueConnection(deps.config.REDIS_URL), prefix: deps.config.QUEUE_PREFIX, concurrency: def.concurrency, settings: def.settings },
  );
  worker.on('failed', (job, err) => logger.warn({ queue: def.queue, jobId: job?.id, attempts: job?.attemptsMade, err: err.message }, 'job failed'));
  worker.on('error', (err) => logger.error({ queue: def.queue, err: err.message }, 'worker error'));
  return worker;
}

export const isEntry = (url: string) => process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;

/** Entry point of a worker process: finishes active jobs on SIGTERM, then exits. */
export async function runWorkerProcess(
  def: AnyWorkerDefinition,
  all: readonly AnyWorkerDefinition[],
  onStart?: (deps: WorkerDeps) => Promise<void>,
): Promise<void> {
  const config = parseConfig();
  const deps: WorkerDeps = { ...(await createDeps(config)), queues: openQueues(config, all) };
  const worker = startWorker(def, deps);
  await onStart?.(deps);
  logger.info({ queue: def.queue }, 'worker started');
  onShutdown(async () => {
    await worker.close();
    await Promise.all(Object.values(deps.queues).map((q) => q.close()));
    await deps.db.end();
  }, (m) => logger.info({ queue: def.queue }, m));
}
