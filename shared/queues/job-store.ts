import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { ObligationKind } from '../domain/jobs.js';
import { openProducers, type JobProducer, type Producers } from './producer.js';
import { QUEUES, SCHEDULES, SCHEDULED_JOB_OPTIONS, type ScheduleId } from './registry.js';

// The reconciler's view of Redis (shared/usecases/reconcile.ts), on a connection of its own: reads of a queue's
// keys (all in the queue's hash slot, so one pipeline per question also on a cluster), the canary, promotes, and
// adds through a producer whose failures it is told of.

/** What the reconciler needs of Redis, per queue. */
export interface JobStore extends JobProducer {
  /** The queue still has the data the reconciler armed (throws RedisUnavailableError when Redis is unreachable). */
  hasCanary(kind: ObligationKind): Promise<boolean>;
  setCanary(kind: ObligationKind): Promise<void>;
  /** Per id: gone, finished (completed or failed), delayed, or there (waiting, active). */
  states(kind: ObligationKind, ids: readonly string[]): Promise<JobState[]>;
  promote(kind: ObligationKind, id: string): Promise<void>;
}
export type JobState = 'missing' | 'finished' | 'delayed' | 'pending';

/** Redis could not answer (unreachable, timed out, not ready): a pass skips what needs it. */
export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/** The canary: a field of the queue's meta hash, which FLUSHALL, a restart without persistence and obliterate delete. */
export const CANARY_FIELD = 'reconciled-epoch';

export interface QueueStore extends JobStore {
  producers: Producers;
  /** Upserts each maintenance schedule Redis no longer has; returns the ids it upserted. */
  ensureSchedules(): Promise<ScheduleId[]>;
  close(): Promise<void>;
}

const unavailable = (e: unknown) => new RedisUnavailableError(String((e as Error)?.message ?? e), { cause: e });

export function openQueueStore(config: Pick<Config, 'REDIS_URL' | 'redisClusterNodes' | 'QUEUE_PREFIX'>): QueueStore {
  const producers = openProducers(config, 'reconciler');
  const redis = producers.connection;
  /** A connection still (re)connecting gets a moment (a process starting, Redis back after a restart). */
  const readyWithin = (ms: number) => new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
  });
  const key = (kind: ObligationKind, suffix: string) => `${config.QUEUE_PREFIX}:${QUEUES[kind].name}:${suffix}`;
  /** Runs a Redis read; any failure (down, timed out, not ready) is RedisUnavailableError. */
  const ask = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (redis.status !== 'ready') await readyWithin(1000);
    if (redis.status !== 'ready') throw new RedisUnavailableError(`redis is ${redis.status}`);
    try {
      return await fn();
    } catch (e) {
      throw unavailable(e);
    }
  };
  return {
    producers,
    enqueue: (requests) => producers.enqueue(requests),
    hasCanary: (kind) => ask(async () => (await redis.hget(key(kind, 'meta'), CANARY_FIELD)) !== null),
    setCanary: (kind) => ask(async () => void (await redis.hset(key(kind, 'meta'), CANARY_FIELD, randomUUID()))),
    states: (kind, ids) => ask(async () => {
      if (ids.length === 0) return [];
      const p = redis.pipeline();
      for (const id of ids) {
        p.hmget(key(kind, id), 'timestamp', 'finishedOn');
        p.zscore(key(kind, 'delayed'), id);
      }
      const answers = (await p.exec()) ?? [];
      return ids.map((_, i): JobState => {
        const [err, fields] = answers[2 * i] ?? [new Error('no answer'), null];
        if (err) throw err;
        const [timestamp, finishedOn] = fields as (string | null)[];
        if (timestamp === null) return 'missing';
        if (finishedOn !== null) return 'finished';
        return answers[2 * i + 1]?.[1] !== null ? 'delayed' : 'pending';
      });
    }),
    promote: (kind, id) => ask(async () => {
      const job = await producers.queues[kind].getJob(id);
      await job?.promote().catch(() => {}); // no longer delayed: it ran meanwhile
    }),
    async ensureSchedules() {
      const q = producers.queues.maintenance;
      const upserted: ScheduleId[] = [];
      for (const [id, s] of Object.entries(SCHEDULES) as [ScheduleId, (typeof SCHEDULES)[ScheduleId]][]) {
        if (await ask(() => q.getJobScheduler(id))) continue;
        await ask(() => q.upsertJobScheduler(id, { every: s.everyMs }, { name: s.task, data: { task: s.task }, opts: SCHEDULED_JOB_OPTIONS }));
        upserted.push(id);
      }
      return upserted;
    },
    close: () => producers.close(),
  };
}
