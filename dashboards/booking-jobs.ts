import type { Job, JobType, Queue } from 'bullmq';

// The booking's jobs in bull-board, for the operator page: the one place that knows how to find them.
//
// Today it asks every registered queue for its jobs (up to PER_STATE of each state) and keeps those whose data
// names the booking (`bookingId`), which works whatever the job ids are. Once job ids are computed from
// PostgreSQL rows (`{kind}-{key}-g{gen}`, the gen kept on the row), this function can look each one up by id
// instead: a change of this file only.

export interface BookingJob {
  queue: string;
  id: string;
  name: string;
  state: string;
  attemptsMade: number;
  /** bull-board's page of the job, on the dashboard's own origin. */
  url: string;
}

const STATES: JobType[] = ['active', 'waiting', 'delayed', 'prioritized', 'waiting-children', 'failed', 'completed'];
const PER_STATE = 500;

/** bull-board's URL of a job: /admin/queues/queue/<queue name>/<job id>, each part URL-encoded. */
export const jobUrl = (queue: string, jobId: string) => `/admin/queues/queue/${encodeURIComponent(queue)}/${encodeURIComponent(jobId)}`;

const namesBooking = (job: Job, bookingId: number) => {
  const data = job.data as { bookingId?: unknown } | null;
  return data !== null && typeof data === 'object' && Number(data.bookingId) === bookingId;
};

export async function bookingJobs(queues: readonly Queue[], bookingId: number): Promise<BookingJob[]> {
  const found: BookingJob[] = [];
  for (const queue of queues) {
    for (const state of STATES) {
      const jobs = await queue.getJobs([state], 0, PER_STATE - 1);
      for (const job of jobs) {
        if (!job?.id || !namesBooking(job, bookingId)) continue;
        found.push({ queue: queue.name, id: job.id, name: job.name, state, attemptsMade: job.attemptsMade, url: jobUrl(queue.name, job.id) });
      }
    }
  }
  return found;
}
