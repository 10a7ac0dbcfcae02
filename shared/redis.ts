import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';
import { redisTls } from './redis-tls.js';

// The one place Redis clients are made, for every process and purpose: a single Redis at REDIS_URL, or a Redis
// Cluster when REDIS_CLUSTER_NODES names its nodes (credentials and TLS from REDIS_URL either way). Every queue
// name carries a hash tag (shared/queues/registry.ts), so each queue's keys live in one slot and BullMQ's multi-key
// scripts run on a cluster; ioredis follows MOVED/ASK redirections and refreshes the slot map after a failover.

export type RedisClient = Redis | Cluster;

/**
 * What the client is for:
 * - `worker`: BullMQ workers and the reconciler; commands wait for a reconnect (BullMQ requires
 *   maxRetriesPerRequest null on a worker's connection);
 * - `producer`: adds after a commit, and the dashboard; fails fast (no offline queue, one retry, a short timeout)
 *   so a Redis outage costs a request at most a few milliseconds;
 * - `reconciler`: the reconciler's reads and re-adds; fails fast, with time for a rebuild's bulk adds;
 * - `request`: the API's limiter and search cache; fails fast too, with the process's key prefix.
 */
export type RedisRole = 'worker' | 'producer' | 'reconciler' | 'request';

const ROLE_OPTIONS: Record<RedisRole, RedisOptions> = {
  worker: { maxRetriesPerRequest: null, enableOfflineQueue: true, connectTimeout: 5000 },
  producer: { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 300, connectTimeout: 2000 },
  // Fails fast too (a pass must not hang on Redis), but gives a rebuild's bulk adds time.
  reconciler: { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 5000, connectTimeout: 2000 },
  request: { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1000, connectTimeout: 2000 },
};

/** Reconnects: 100 ms doubling to 2 s (ioredis's default grows to 2 s as well, in 50 ms steps). */
const retryStrategy = (times: number) => Math.min(2000, 100 * 2 ** Math.min(5, times - 1));

export interface RedisClientOptions {
  keyPrefix?: string;
  lazyConnect?: boolean;
}

/** The credentials, database and TLS of REDIS_URL, for either kind of client. */
function fromUrl(url: string): RedisOptions {
  const u = new URL(url);
  return {
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    ...redisTls(url),
  };
}

/** A Redis client for `role`: a Cluster when REDIS_CLUSTER_NODES is set, else a single Redis at REDIS_URL. */
export function redisClient(
  config: Pick<Config, 'REDIS_URL' | 'redisClusterNodes'>,
  role: RedisRole,
  o: RedisClientOptions = {},
): RedisClient {
  const base = { ...fromUrl(config.REDIS_URL), ...ROLE_OPTIONS[role] };
  if (config.redisClusterNodes.length > 0) {
    const { enableOfflineQueue, ...nodeOptions } = base;
    const cluster: ClusterOptions = {
      redisOptions: nodeOptions, enableOfflineQueue, keyPrefix: o.keyPrefix, lazyConnect: o.lazyConnect,
      clusterRetryStrategy: retryStrategy,
      // A failover: the cluster is briefly down or a slot moves; retry the command soon instead of failing it.
      retryDelayOnFailover: 100, retryDelayOnClusterDown: 100, retryDelayOnTryAgain: 100, maxRedirections: 16,
      slotsRefreshTimeout: 2000,
    };
    return new Cluster(config.redisClusterNodes, cluster);
  }
  const u = new URL(config.REDIS_URL);
  return new Redis({
    ...base, host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
    keyPrefix: o.keyPrefix, lazyConnect: o.lazyConnect, retryStrategy,
  });
}

/** Closes a client without waiting on a server that may be gone. */
export function closeRedis(client: RedisClient): void {
  client.disconnect();
}
