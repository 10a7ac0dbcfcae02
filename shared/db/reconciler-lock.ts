import { z } from 'zod';
import { sql, type DatabasePool } from './pool.js';
import { OBLIGATION_KINDS, type ObligationKind } from '../domain/jobs.js';

// One reconciler pass per kind at a time, across every process of the kind: a session advisory lock held on a
// connection of its own while the pass runs (the pass's own statements run on other connections, outside any
// transaction), released at the end, or by PostgreSQL when the process dies. A pass that finds it taken is
// skipped; two passes at once would only be wasteful (every step is a CAS or an idempotent add), never wrong.
const RECONCILER_LOCK_NAMESPACE = 7_240_017;
const locked = z.object({ locked: z.boolean() });

/** Runs `pass` holding the kind's lock; false (and `pass` not run) when another process holds it. */
export async function tryReconcilerLock(db: DatabasePool, kind: ObligationKind, pass: () => Promise<void>): Promise<boolean> {
  const key = sql.fragment`${RECONCILER_LOCK_NAMESPACE}::int, ${OBLIGATION_KINDS.indexOf(kind)}::int`;
  return db.connect(async (c) => {
    if (!(await c.oneFirst(sql.type(locked)`SELECT pg_try_advisory_lock(${key}) AS locked`))) return false;
    try {
      await pass();
    } finally {
      // A failed unlock throws: the connection is then discarded, and its session's lock with it.
      await c.query(sql.typeAlias('void')`SELECT FROM (SELECT pg_advisory_unlock(${key})) unlocked`);
    }
    return true;
  });
}
