import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

// The two probes that bound a read replica's staleness (shared/read-replica.ts). WAL positions leave the database
// as decimal byte offsets (pg_lsn − '0/0'), which JavaScript compares as BigInt.

/** The primary's current WAL position. */
export async function primaryWalPosition(db: CommonQueryMethods): Promise<bigint> {
  const lsn = await db.oneFirst(sql.type(z.object({ lsn: z.string() }))`SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS lsn`);
  return BigInt(lsn);
}

/** How far a replica has replayed; `inRecovery` false: not a standby at all (then it is as fresh as a primary). */
export async function replicaReplayPosition(db: CommonQueryMethods): Promise<{ inRecovery: boolean; replayed: bigint | null }> {
  const r = await db.one(sql.type(z.object({ inRecovery: z.boolean(), replayed: z.string().nullable() }))`
    SELECT pg_is_in_recovery() AS "inRecovery", (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::text AS replayed`);
  return { inRecovery: r.inRecovery, replayed: r.replayed === null ? null : BigInt(r.replayed) };
}
