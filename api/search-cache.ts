import type { RedisClient as Redis } from '../shared/redis.js';
import type { Metrics } from './metrics.js';
import type { SearchCache } from '../shared/usecases/search.js';

/** The search use cases' cache, in Redis for `ttlSeconds` (0: off). Redis trouble only costs a database read. */
export function redisSearchCache(redis: Redis, metrics: Metrics, ttlSeconds: number): SearchCache {
  return async (kind, key, load) => {
    if (ttlSeconds <= 0) return load();
    const cacheKey = `search:${kind}:${key}`;
    const hit = await redis.get(cacheKey).catch(() => null);
    if (hit !== null) {
      metrics.searchCache.inc({ kind, result: 'hit' });
      return JSON.parse(hit);
    }
    metrics.searchCache.inc({ kind, result: 'miss' });
    const value = await load();
    await redis.set(cacheKey, JSON.stringify(value), 'EX', ttlSeconds).catch(() => {});
    return value;
  };
}
