import type { Deps } from './deps.js';
import { pingDatabase } from '../db/pool.js';
import { withTimeout } from '../async.js';
import { DomainError } from '../domain/errors.js';
import { shutdownRequested } from '../supervision.js';

const PROBE_TIMEOUT_MS = 2000;

/**
 * Resolves when PostgreSQL and Redis both answer in time; else UNAVAILABLE saying which is down.
 * A process asked to stop is not ready, even while it still drains the requests it has.
 */
export async function assertReady(deps: Pick<Deps, 'db'>, pingRedis: () => Promise<unknown>): Promise<void> {
  if (shutdownRequested()) throw new DomainError('UNAVAILABLE', 'shutting down', { stopping: true });
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
