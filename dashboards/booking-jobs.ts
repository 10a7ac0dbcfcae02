import type { QueueSet } from '../shared/queues/producer.js';
import { jobIdOf, type JobRequest } from '../shared/domain/jobs.js';

// The booking's jobs in bull-board, for the operator page: the one place that knows how to find them. Job ids are
// computed from the PostgreSQL rows (`{kind}-{key}-g{gen}`, CONTRACT "Jobs"), so each one is looked up by id, for
// every generation the row has had (an earlier one may have ended failed and still be retained): no queue is
// scanned, however many jobs it holds.

export interface BookingJob {
  queue: string;
  id: string;
  name: string;
  state: string;
  attemptsMade: number;
  /** bull-board's page of the job, on the dashboard's own origin. */
  url: string;
}

/** bull-board's URL of a job: /admin/queues/queue/<queue name>/<job id>, each part URL-encoded. */
export const jobUrl = (queue: string, jobId: string) => `/admin/queues/queue/${encodeURIComponent(queue)}/${encodeURIComponent(jobId)}`;

/** Past this many generations of one row only the latest are looked up (a poison job re-armed again and again). */
const MAX_GENERATIONS = 20;

export async function bookingJobs(queues: QueueSet, keys: readonly JobRequest[]): Promise<BookingJob[]> {
  const ids = keys.flatMap((k) => {
    const gens = Array.from({ length: Math.min(k.gen + 1, MAX_GENERATIONS) }, (_, i) => k.gen - i).reverse();
    return gens.map((gen) => ({ queue: queues[k.kind], id: jobIdOf({ ...k, gen }) }));
  });
  const found = await Promise.all(ids.map(async ({ queue, id }): Promise<BookingJob | null> => {
    const job = await queue.getJob(id);
    if (!job) return null;
    return { queue: queue.name, id, name: job.name, state: await job.getState(), attemptsMade: job.attemptsMade, url: jobUrl(queue.name, id) };
  }));
  return found.filter((j): j is BookingJob => j !== null);
}
