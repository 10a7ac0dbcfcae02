import type { PreparedDb } from '../db/prepared.js';
import { SearchIndexes } from './indexes.js';

/**
 * The API's search indexes for a cache TTL of `ttlS` seconds, or null when the TTL is too short to answer from
 * memory (under 2 s: then every search reads PostgreSQL). An answer is at most TTL/2 old (the poll interval
 * while PostgreSQL answers; up to TTL/2 while it does not), within the contract's TTL.
 */
export function startSearchIndexes(db: PreparedDb, ttlS: number, enabled = true): SearchIndexes | null {
  if (!enabled || ttlS < 2) return null;
  const indexes = new SearchIndexes(db, {
    pollMs: 200, maxAgeMs: (ttlS * 1000) / 2, catalogueEveryMs: (ttlS * 1000) / 2, rebuildEveryMs: 5 * 60_000,
  });
  indexes.start();
  return indexes;
}
