import { Queue, type ConnectionOptions } from 'bullmq';
import { z } from 'zod';
import { traceparentFor, type Correlation } from '../correlation.js';
import type { Config } from '../config.js';
import { redisTls } from '../redis-tls.js';
import { QUEUES, QUEUE_NAMES, SCHEDULED_JOB_OPTIONS, SCHEDULES, type QueueName, type ScheduleId } from './registry.js';

/** BullMQ wants blocking connections that retry forever (producers and workers alike); TLS as the URL says. */
export function queueConnection(url: string): ConnectionOptions {
  const u = new URL(url);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
    username: u.username ? decodeURIComponent(u.username) : undefined, password: u.password ? decodeURIComponent(u.password) : undefined,
    maxRetriesPerRequest: null,
    ...redisTls(url),
  };
}

/** A producer for every registered queue. */
export type Queues = { readonly [Q in QueueName]: Queue };

/** Opens a producer per registered queue, with the queue's default job options, on one connection config. */
export function openQueues(config: Pick<Config, 'REDIS_URL' | 'QUEUE_PREFIX'>): Queues {
  const connection = queueConnection(config.REDIS_URL);
  return Object.fromEntries(QUEUE_NAMES.map((name) => [
    name, new Queue(name, { connection, prefix: config.QUEUE_PREFIX, defaultJobOptions: QUEUES[name].defaultJobOptions }),
  ])) as Queues;
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((q) => q.close()));
}

const jobCorrelation = z.object({ requestId: z.string().max(200).optional(), traceparent: z.string().max(55).optional() });

/** The request id (and trace context) a job was enqueued in, if any: its job data carries them beside the payload. */
export function correlationOf(data: unknown): Correlation | undefined {
  const c = jobCorrelation.safeParse(data);
  return c.success && c.data.requestId ? { requestId: c.data.requestId, traceparent: c.data.traceparent ?? traceparentFor(c.data.requestId) } : undefined;
}

/** Creates or updates a repeatable job (idempotent: every process that works the queue may call it). */
export async function upsertSchedule(queues: Queues, id: ScheduleId): Promise<void> {
  const s = SCHEDULES[id];
  await queues[s.queue].upsertJobScheduler(id, { every: s.everyMs }, { name: s.job.name, data: s.job.data, opts: SCHEDULED_JOB_OPTIONS });
}

/** The schedules that run on `queue`. */
export const schedulesOf = (queue: QueueName): ScheduleId[] =>
  (Object.keys(SCHEDULES) as ScheduleId[]).filter((id) => SCHEDULES[id].queue === queue);
