import { Queue } from 'bullmq';
import type { Config } from '../config.js';
import { currentCorrelation } from '../correlation.js';
import { JOB_ID_PREFIX, JOB_KINDS, jobIdOf, type JobKind, type JobRequest, type ObligationKind } from '../domain/jobs.js';
import { jobsEnqueueFailed } from '../metrics/work.js';
import { logger } from '../logger.js';
import { closeRedis, redisClient, type RedisClient, type RedisRole } from '../redis.js';
import { QUEUES, jobOptions } from './registry.js';
import { KeptAdds } from './kept-adds.js';
import { AddBatches } from './add-batches.js';

// The producer side of the queues: what a process adds right after the commit that owes the work. It fails fast:
// a client without an offline queue and with a short command timeout, checked for readiness before each add, and
// after a failure a second of adds is counted as failed without asking Redis. A failed add never fails the caller;
// it is counted in jobs_enqueue_failed_total{queue} and kept to be added again, each second while the connection is
// ready, so a job Redis missed (a timeout under load, a short outage) is there within seconds, not only once its row
// is overdue. What this process cannot keep (it died, or more than RETRY_CAP failed) the reconciler arms from
// PostgreSQL. A timed-out add may have reached Redis after all: adding it again is a no-op (the id exists).
//
// A job due at least DEFER_AHEAD_MS ahead (a hold's expiry, 15 minutes out) is not waited for: its add leaves with
// the next batch of its kind as any other (no timer), and the caller answers meanwhile, so a hold's 201 does not wait
// for Redis after its statement. A crash loses what it would have lost had the caller waited (the adds not yet in
// Redis), and the reconciler handles those as before. A job's delay is counted when its batch leaves, so it is due at
// its time however long it waited. The reconciler's own producer awaits every add: it counts what failed.

export interface JobProducer {
  /**
   * Adds each request's job (a duplicate id is a no-op); never throws. `failed`: the awaited adds that did not reach
   * Redis (one not waited for, see above, counts 0 here; its failure is counted in the metric and kept all the same).
   */
  enqueue(requests: readonly JobRequest[]): Promise<{ failed: number }>;
}

/** A producer that adds nothing and counts nothing (benchmarks of the database path, processes without Redis). */
export const noJobs: JobProducer = { enqueue: async () => ({ failed: 0 }) };

export type QueueSet = Readonly<Record<JobKind, Queue>>;

export interface Producers extends JobProducer {
  queues: QueueSet;
  /** Waits until every add made so far, awaited or not, has been sent and answered (tests, and close()). */
  settle(): Promise<void>;
  connection: RedisClient;
  /** True while the producer's connection is up (and not in its back-off after a failure). */
  ready(): boolean;
  close(): Promise<void>;
}

/** After a failed add, further adds fail at once for this long (no Redis call): an outage costs each request ~0 ms. */
const BREAKER_MS = 1000;

/** Failed adds kept to be added again (the oldest dropped beyond this: the reconciler has them in PostgreSQL). */
const RETRY_CAP = 20_000;
const RETRY_EVERY_MS = 1000;
const RETRY_PAGE = 1000;

/** A job due at least this far ahead is not waited for (see above). */
export const DEFER_AHEAD_MS = 5_000;

type BullJob = ReturnType<typeof bullJobOf>;

/** The BullMQ add of one request: its name (the id prefix), data (the key, gen, due time, correlation) and id. */
export function bullJobOf(r: JobRequest, now = Date.now()) {
  const dueAt = r.runAt ? r.runAt.getTime() : now;
  const correlation = currentCorrelation();
  const { kind, gen, runAt: _runAt, promote: _promote, ...key } = r;
  return {
    name: JOB_ID_PREFIX[kind],
    data: { ...key, gen, dueAt, requestId: correlation?.requestId, traceparent: correlation?.traceparent },
    opts: { ...jobOptions(kind), jobId: jobIdOf(r), delay: Math.max(0, dueAt - now) },
  };
}

/** The requests by kind, in order. */
function byKind(requests: readonly JobRequest[]): Map<ObligationKind, JobRequest[]> {
  const m = new Map<ObligationKind, JobRequest[]>();
  for (const r of requests) {
    const same = m.get(r.kind);
    if (same) same.push(r);
    else m.set(r.kind, [r]);
  }
  return m;
}

/** Opens a producer per queue on one fail-fast connection (the reconciler's waits a little longer: `role`). */
export function openProducers(
  config: Pick<Config, 'REDIS_URL' | 'redisClusterNodes' | 'QUEUE_PREFIX'>,
  role: Extract<RedisRole, 'producer' | 'reconciler'> = 'producer',
): Producers {
  const connection = redisClient(config, role);
  connection.on('error', () => {}); // an outage shows as failed adds, not as a crash
  const queues = Object.fromEntries(JOB_KINDS.map((k) => {
    const q = new Queue(QUEUES[k].name, { connection, prefix: config.QUEUE_PREFIX, defaultJobOptions: jobOptions(k) });
    q.on('error', () => {});
    return [k, q];
  })) as Record<JobKind, Queue>;
  let breakerUntil = 0;
  const ready = () => connection.status === 'ready' && Date.now() >= breakerUntil;
  let lastWarnAt = 0;
  /** A failed add: the breaker opens for a second; a warning at most every 10 s says why. */
  const noteFailure = (kind: ObligationKind, err: unknown) => {
    breakerUntil = Date.now() + BREAKER_MS;
    if (Date.now() - lastWarnAt < 10_000) return;
    lastWarnAt = Date.now();
    logger.warn({ queue: kind, err: String(err), kept: retry.size }, 'job add failed; kept to be added again');
  };
  const retry = new KeptAdds<ObligationKind, BullJob>(RETRY_CAP);
  const keep = (kind: ObligationKind, jobs: readonly BullJob[]) => retry.keep(kind, jobs.map((job) => ({ id: job.opts.jobId, job })));
  /** Adds the kept jobs again, a page per kind, with their delay counted from now; failures stay kept. */
  async function addAgain(): Promise<void> {
    if (retry.size === 0 || !ready()) return;
    await Promise.all([...retry.take(RETRY_PAGE)].map(async ([kind, page]) => {
      const jobs = page.map((job) => ({ ...job, opts: { ...job.opts, delay: Math.max(0, job.data.dueAt - Date.now()) } }));
      await queues[kind].addBulk(jobs).catch((err) => {
        noteFailure(kind, err);
        keep(kind, jobs);
      });
    }));
  }
  let retrying = false;
  const retryTimer = setInterval(() => {
    if (retrying) return;
    retrying = true;
    void addAgain().finally(() => (retrying = false));
  }, RETRY_EVERY_MS);
  retryTimer.unref();

  // Concurrent callers' adds of a kind go to Redis together (add-batches.ts: one wake of the workers per batch), each
  // job's delay counted from the moment its batch leaves.
  const fromNow = (job: BullJob): BullJob => ({ ...job, opts: { ...job.opts, delay: Math.max(0, job.data.dueAt - Date.now()) } });
  const batches = Object.fromEntries(JOB_KINDS.map((k) => [k, new AddBatches<BullJob>((batch) => {
    const jobs = batch.map(fromNow);
    return jobs.length === 1 ? queues[k].add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts) : queues[k].addBulk(jobs);
  })])) as Record<JobKind, AddBatches<BullJob>>;
  /** The adds not waited for, still on their way (settle() waits for them). */
  const unwaited = new Set<Promise<number>>();
  const settle = async () => {
    await Promise.all(Object.values(batches).map((b) => b.drain()));
    await Promise.all(unwaited);
  };

  async function addKind(kind: ObligationKind, requests: JobRequest[]): Promise<number> {
    const q = queues[kind];
    const jobs = requests.map((r) => bullJobOf(r));
    try {
      await batches[kind].add(jobs);
    } catch (err) {
      noteFailure(kind, err);
      jobsEnqueueFailed.inc({ queue: kind }, requests.length);
      keep(kind, jobs);
      return requests.length;
    }
    for (const r of requests.filter((x) => x.promote)) {
      // Best effort: a delayed job of a row that is due now runs now (else at its time, or the reconciler promotes it).
      const job = await q.getJob(jobIdOf(r)).catch(() => undefined);
      if (job && (await job.isDelayed().catch(() => false))) await job.promote().catch(() => {});
    }
    return 0;
  }

  /** A request whose add nobody needs to wait for: due far enough ahead, and not one to promote. */
  const deferrable = (r: JobRequest, now: number) => role === 'producer' && !r.promote && r.runAt !== undefined && r.runAt.getTime() - now >= DEFER_AHEAD_MS;

  return {
    queues, connection, ready, settle,
    async enqueue(requests) {
      if (requests.length === 0) return { failed: 0 };
      if (!ready()) {
        for (const [kind, rs] of byKind(requests)) {
          jobsEnqueueFailed.inc({ queue: kind }, rs.length);
          keep(kind, rs.map((r) => bullJobOf(r)));
        }
        return { failed: requests.length };
      }
      const now = Date.now();
      const later = requests.filter((r) => deferrable(r, now));
      // Not awaited: addKind counts and keeps what fails, and never throws.
      for (const [kind, rs] of byKind(later)) {
        const adding = addKind(kind, rs);
        unwaited.add(adding);
        void adding.finally(() => unwaited.delete(adding));
      }
      const soon = later.length === 0 ? requests : requests.filter((r) => !deferrable(r, now));
      const failed = await Promise.all([...byKind(soon)].map(([kind, rs]) => addKind(kind, rs)));
      return { failed: failed.reduce((a, b) => a + b, 0) };
    },
    async close() {
      await settle();
      clearInterval(retryTimer);
      await Promise.all(Object.values(queues).map((q) => q.close().catch(() => {})));
      closeRedis(connection);
    },
  };
}
