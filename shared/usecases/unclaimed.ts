import type { JobOutcome } from '../domain/jobs.js';
import type { LeaseState } from '../db/leases.js';

/**
 * What a job does when it could not claim its row (shared/db/leases.ts), the same for every kind: the row is
 * settled (nothing owed: done), of a newer generation (this job is a stale duplicate: done), or leased by another
 * attempt (wait for the lease's end: later, no attempt counted).
 */
export function unclaimedOutcome(state: LeaseState | null, gen: number, now: Date): JobOutcome {
  if (!state || !state.open) return { kind: 'done', result: 'already_settled', log: 'settled already (by its own answer, a webhook, or another job)' };
  if (state.gen > gen) return { kind: 'done', result: 'superseded', log: `superseded by the job of generation ${state.gen}` };
  const until = state.leaseUntil ?? new Date(now.getTime() + 1000);
  return { kind: 'later', at: new Date(until.getTime() + 100), log: `another attempt holds the row until ${until.toISOString()}` };
}
