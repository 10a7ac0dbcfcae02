import type { Redis } from 'ioredis';
import type { Metrics } from './metrics.js';

/** Read-through cache for public search; Redis trouble only costs a database read. */
export async function cachedSearch<T>(
  redis: Redis,
  metrics: Metrics,
  kind: string,
  key: string,
  ttlSeconds: number,
  load: () => Promise<T>,
): Promise<T> {
  if (ttlSeconds <= 0) return load();
  const cacheKey = `search:${kind}:${key}`;
  const hit = await redis.get(cacheKey).catch(() => null);
  if (hit !== null) {
    metrics.searchCache.inc({ kind, result: 'hit' });
    return JSON.parse(hit) as T;
  }
  metrics.searchCache.inc({ kind, result: 'miss' });
  const value = await load();
  await redis.set(cacheKey, JSON.stringify(value), 'EX', ttlSeconds).catch(() => {});
  return value;
}
