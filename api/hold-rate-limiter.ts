import { randomUUID } from 'node:crypto';
import type { RedisClient as Redis } from '../shared/redis.js';
import { DomainError } from '../shared/domain/errors.js';
import { logger } from '../shared/logger.js';
import type { HoldLimiter } from '../shared/usecases/holds.js';

// Sliding window log, atomic in Redis: drop entries older than the window, refuse when full,
// else record this hold. Redis's own clock keeps several API instances consistent.
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, 0}`;

interface HoldSlot {
  /** Gives the slot back: the request did not create a hold, so it does not count. */
  release(): Promise<void>;
}

type LimiterRedis = Redis & { holdRate(key: string, windowMs: number, limit: number, member: string): Promise<[number, number]> };

/** The hold limiter in Redis: a sliding-window log per customer; fails open (and counts it) when Redis is down. */
export class HoldRateLimiter implements HoldLimiter {
  private readonly redis: LimiterRedis;

  constructor(
    redis: Redis,
    private readonly limit: number,
    private readonly windowSeconds: number,
    private readonly onFailOpen: () => void,
  ) {
    // defineCommand sends EVALSHA (the script body only once per connection).
    if (!('holdRate' in redis)) redis.defineCommand('holdRate', { numberOfKeys: 1, lua: SCRIPT });
    this.redis = redis as LimiterRedis;
  }

  /** Takes one of the customer's hold slots or throws RATE_LIMITED; lets the request through if Redis is down. */
  async acquire(customerId: number): Promise<HoldSlot> {
    const key = `hold-rate:${customerId}`;
    const member = randomUUID();
    let answer: [number, number];
    try {
      answer = await this.redis.holdRate(key, this.windowSeconds * 1000, this.limit, member);
    } catch (err) {
      this.onFailOpen();
      logger.warn({ err: String(err) }, 'hold rate limiter unavailable; failing open');
      return { release: async () => {} };
    }
    if (answer[0] !== 1) {
      const retryAfterSeconds = Math.max(1, Math.ceil(answer[1] / 1000));
      throw new DomainError('RATE_LIMITED', `at most ${this.limit} holds per ${this.windowSeconds} s`, { retryAfterSeconds });
    }
    return { release: async () => void (await this.redis.zrem(key, member).catch(() => 0)) };
  }
}
