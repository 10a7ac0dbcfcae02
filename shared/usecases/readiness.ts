import type { Deps } from './deps.js';
import { pingDatabase } from '../db/pool.js';
import { withTimeout } from '../async.js';
import { DomainError } from '../domain/errors.js';
import { shutdownRequested } from '../supervision.js';

const PROBE_TIMEOUT_MS = 2000;
/** How long /ready waits for the search indexes' first load before it answers 200 anyway (about 3 s at 20,000 cars). */
export const SEARCH_LOAD_MAX_MS = 60_000;

/**
 * Resolves when PostgreSQL and Redis both answer in time; else UNAVAILABLE saying which is down.
 * A process asked to stop is not ready, even while it still drains the requests it has. Nor is one whose search
 * indexes are still being built (`searchBuilt` false, the first seconds after a start, at most SEARCH_LOAD_MAX_MS):
 * until then every search reads PostgreSQL, and at a peak those reads take the cores the build needs, so that it
 * hardly ends.
 */
export async function assertReady(deps: Pick<Deps, 'db'>, pingRedis: () => Promise<unknown>, searchBuilt: () => boolean = () => true): Promise<void> {
  if (shutdownRequested()) throw new DomainError('UNAVAILABLE', 'shutting down', { stopping: true });
  if (!searchBuilt()) throw new DomainError('UNAVAILABLE', 'search indexes still loading', { searchIndex: 'loading' });
  const [pg, redis] = await Promise.allSettled([
    withTimeout(pingDatabase(deps.db), PROBE_TIMEOUT_MS, 'postgres ping'),
    withTimeout(pingRedis(), PROBE_TIMEOUT_MS, 'redis ping'),
  ]);
  if (pg.status === 'fulfilled' && redis.status === 'fulfilled') return;
  throw new DomainError('UNAVAILABLE', 'not ready', {
    postgres: pg.status === 'fulfilled' ? 'ok' : 'down',
    redis: redis.status === 'fulfilled' ? 'ok' : 'down',
  });
}
