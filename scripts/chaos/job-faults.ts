import { Queue, type Job } from 'bullmq';
import { parseConfig } from '../../shared/config.js';
import { OBLIGATION_KINDS, type ObligationKind } from '../../shared/domain/jobs.js';
import { QUEUES } from '../../shared/queues/registry.js';
import { redisClient } from '../../shared/redis.js';
import type { Rng } from './rng.js';

// The chaos faults that act on the jobs themselves (scripts/chaos/faults.ts): a job that stalls twice, and a queue
// obliterated (as an operator could from bull-board).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function connect(redisUrl: string, prefix: string, kind: ObligationKind) {
  const connection = redisClient(parseConfig({ REDIS_URL: redisUrl }), 'worker');
  connection.on('error', () => {});
  return { connection, name: QUEUES[kind].name, prefix };
}

/** The pid in a job's processedBy (`{PROC_NAME}#{pid}`, workers/lib/job-worker.ts). */
const pidOf = (job: Job) => Number(job.processedBy?.split('#').at(-1));

/**
 * A job stalls twice: while the provider answers slowly (provider-bound jobs stay active for seconds), the process
 * working an active job is killed (-9), and once the job runs again in another process that one is killed too. The
 * job has then stalled past its limit: BullMQ fails it without running it, and the reconciler must arm the
 * still-owed work again. `kill(pid)` kills the topology's process with that pid (it restarts, supervised).
 */
export async function stallTwice(redisUrl: string, prefix: string, rng: Rng, kill: (pid: number) => boolean, slowProvider: (on: boolean) => Promise<void>): Promise<string> {
  const kinds = rng.shuffle(OBLIGATION_KINDS.filter((k) => QUEUES[k].providerLimited));
  const queues = kinds.map((kind) => {
    const { connection, name } = connect(redisUrl, prefix, kind);
    return { connection, queue: new Queue(name, { connection, prefix }) };
  });
  await slowProvider(true);
  try {
    const until = Date.now() + 30_000;
    let victim: { job: Job; pid: number; q: Queue } | null = null;
    while (!victim && Date.now() < until) {
      for (const { queue } of queues) {
        const [job] = await queue.getJobs(['active'], 0, 0);
        if (job && pidOf(job) && kill(pidOf(job))) {
          victim = { job, pid: pidOf(job), q: queue };
          break;
        }
      }
      if (!victim) await sleep(200);
    }
    if (!victim) return 'no active provider job to stall';
    const first = `${victim.q.name} ${victim.job.id}`;
    while (Date.now() < until + 30_000) {
      await sleep(200);
      const again = await victim.q.getJob(victim.job.id!);
      if (!again) return `${first}: killed once (then removed)`;
      if ((await again.isActive()) && pidOf(again) !== victim.pid && kill(pidOf(again))) return `${first}: its process killed twice mid-job`;
      if (again.finishedOn) return `${first}: killed once (finished before a second)`;
    }
    return `${first}: killed once (not active again in time)`;
  } finally {
    await slowProvider(false);
    for (const { queue, connection } of queues) {
      await queue.close().catch(() => {});
      connection.disconnect();
    }
  }
}

/** Obliterates one (seeded) obligation queue, active jobs and all. */
export async function obliterateQueue(redisUrl: string, prefix: string, rng: Rng): Promise<string> {
  const kind = rng.pick([...OBLIGATION_KINDS])!;
  const { connection, name } = connect(redisUrl, prefix, kind);
  const queue = new Queue(name, { connection, prefix });
  try {
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'failed', 'completed');
    await queue.obliterate({ force: true });
    return `${name} obliterated (${JSON.stringify(counts)})`;
  } finally {
    await queue.close().catch(() => {});
    connection.disconnect();
  }
}
