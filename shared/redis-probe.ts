import { Redis } from 'ioredis';
import { redisTls } from './redis-tls.js';

/**
 * Whether the Redis at `url` answers a PING within `timeoutMs`: null when it does, else why not in a few words
 * (for a start-up message that names REDIS_URL). One attempt, no retries, no offline queue.
 */
export async function probeRedis(url: string, timeoutMs = 3000): Promise<string | null> {
  const redis = new Redis(url, {
    lazyConnect: true, connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 0, enableOfflineQueue: false,
    retryStrategy: () => null, ...redisTls(url),
  });
  let lastError: (Error & { code?: string }) | undefined;
  redis.on('error', (e: Error) => (lastError = e));
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (e) {
    const err = lastError ?? (e as Error & { code?: string });
    if (err.code === 'ECONNREFUSED') return 'nothing listens there (connection refused)';
    if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return 'its host name does not resolve';
    if (/timed? ?out/i.test(err.message)) return 'no answer (timed out)';
    return err.message;
  } finally {
    redis.disconnect();
  }
}
