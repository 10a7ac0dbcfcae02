import type { CommonQueryMethods, DatabaseTransactionConnection } from '../db/pool.js';
import type { JobRequest } from '../domain/jobs.js';
import type { Deps } from './deps.js';

// The use-case layer has two kinds of function. An ENTRY is what a caller does (place a hold, cancel, handle a
// webhook, run a job): it owns its transaction, through `transact`. An EFFECT (shared/usecases/effects/) is a step
// inside one: it takes the transaction and, when it creates an obligation (a hold, a refund, an intent
// cancellation, a notification), notes the job it owes with `noteJob(tx, …)`. `transact` adds the noted jobs right
// after COMMIT, in the process that committed; a rolled-back transaction adds nothing. The job is only the
// obligation's projection: an add that fails (Redis down) is counted and the reconciler arms it from the row.
//
// The noted jobs hang off the transaction object itself, not an AsyncLocalStorage: a pool that hands out
// connections from callbacks may run the transaction in another request's async context.

const pending = new WeakMap<object, JobRequest[]>();

/** Runs `fn` in a transaction; once it has committed, adds the jobs its effects noted. Returns `fn`'s value. */
export async function transact<T>(
  deps: Pick<Deps, 'db' | 'jobs'>,
  fn: (tx: DatabaseTransactionConnection) => Promise<T>,
): Promise<T> {
  let noted: JobRequest[] = [];
  const result = await deps.db.transaction(async (tx) => {
    // slonik retries a transaction that hit a serialization failure or a deadlock: only the last attempt counts.
    noted = [];
    pending.set(tx, noted);
    try {
      return await fn(tx);
    } finally {
      pending.delete(tx);
    }
  });
  await deps.jobs.enqueue(noted);
  return result;
}

/** Notes, inside `transact`, the job owed by an obligation this transaction writes. */
export function noteJob(tx: CommonQueryMethods, request: JobRequest): void {
  const noted = pending.get(tx);
  if (!noted) throw new Error(`a ${request.kind} job was noted outside transact(): its obligation would have no job`);
  noted.push(request);
}

/** The one write that is not a transaction (the one-statement car hold, shared/db/bookings.ts): its job is added right after the statement returns. */
export async function afterStatement(deps: Pick<Deps, 'jobs'>, requests: readonly JobRequest[]): Promise<void> {
  await deps.jobs.enqueue(requests);
}
