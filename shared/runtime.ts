import { Redis } from 'ioredis';
import { redisTls } from './redis-tls.js';
import { createDb } from './db/pool.js';
import { createPreparedDb } from './db/prepared.js';
import { openReadReplica } from './read-replica.js';
import { PspClient } from './psp/client.js';
import { pspDuration } from './metrics/work.js';
import { systemClock, type Clock } from './domain/clock.js';
import type { Config } from './config.js';
import type { Deps } from './usecases/deps.js';

/** Request-path Redis: fail fast instead of queueing, so callers can fail open. TLS when the URL is `rediss://`. */
export function requestRedis(url: string, keyPrefix = '', opts: { lazyConnect?: boolean } = {}): Redis {
  return new Redis(url, {
    keyPrefix, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1000, connectTimeout: 2000, ...redisTls(url), ...opts });
}

export function pspClient(config: Config): PspClient {
  return new PspClient({
    baseUrl: config.pspUrl, apiKey: config.PSP_API_KEY, timeoutMs: 2000, retries: 2,
    onCall: (c) => pspDuration.observe({ operation: c.operation, outcome: c.outcome }, c.seconds),
  });
}

/**
 * A process's dependencies. Pools are small: the machine has 2 cores, and two of every process (as the
 * chaos tooling runs them) must stay well below PostgreSQL's max_connections (100). Connections open on demand.
 */
export async function createDeps(
  config: Config, opts: { clock?: Clock; poolSize?: number; preparedPoolSize?: number; readReplica?: boolean } = {},
): Promise<Deps> {
  const db = await createDb(config.DATABASE_URL, { maximumPoolSize: opts.poolSize ?? 4 });
  // Only processes that serve stale-tolerant reads (the api) open the replica, and only when one is configured.
  const replica = opts.readReplica && config.DATABASE_READ_URL
    ? await openReadReplica(db, config.DATABASE_READ_URL, config.DATABASE_READ_MAX_LAG_S, { poolSize: opts.poolSize })
    : undefined;
  return {
    db,
    replica,
    prepared: createPreparedDb(config.DATABASE_URL, opts.preparedPoolSize ?? 2),
    clock: opts.clock ?? systemClock,
    config,
    psp: pspClient(config),
  };
}
