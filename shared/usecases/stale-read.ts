import type { DatabasePool } from '../db/pool.js';
import { DomainError } from '../domain/errors.js';
import type { Deps } from './deps.js';

/**
 * A read that may be stale by the replica's lag bound (DATABASE_READ_MAX_LAG_S): on the read replica while it is
 * fresh enough, else on the primary. Only for reads nothing is decided on (searches, availability, the first page
 * of a timeline): holds, changes, payments and whatever checks before writing read the primary, in their transaction.
 * A replica that fails the read (down, a query cancelled by recovery) costs a second read, on the primary.
 * `primaryToo`: an answer from the replica that the primary may contradict (a row newer than the replica) is asked
 * again there.
 */
export async function staleRead<T>(
  deps: Pick<Deps, 'db' | 'replica'>,
  read: (db: DatabasePool) => Promise<T>,
  opts: { primaryToo?: (e: DomainError) => boolean } = {},
): Promise<T> {
  const replica = deps.replica?.pool();
  if (!replica) return read(deps.db);
  try {
    return await read(replica);
  } catch (e) {
    if (e instanceof DomainError) {
      if (opts.primaryToo?.(e)) return read(deps.db);
      throw e;
    }
    deps.replica!.failed(e);
    return read(deps.db);
  }
}
