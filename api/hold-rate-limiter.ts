import { randomUUID } from 'node:crypto';
import type { RedisClient as Redis } from '../shared/redis.js';
import { DomainError } from '../shared/domain/errors.js';
import { logger } from '../shared/logger.js';
import type { HoldLimiter, HoldSlot } from '../shared/usecases/holds.js';

// Only holds that are created count (CONTRACT.md "Holds"), also under concurrency. Per customer, two sorted sets in
// Redis (its clock, so several API instances agree): `created`, the holds made in the window (sliding log), and
// `pending`, the requests past validation whose hold is being decided right now. A request takes a pending slot
// before its insert; a 201 turns it into a created one, a refusal drops it. The rule, atomic in one script:
//   created ≥ limit            → 429 (Retry-After: until the oldest created hold leaves the window);
//   created + pending < limit  → take a pending slot and go;
//   otherwise                  → the limit would be reached only if the in-flight ones succeed: wait for them to
//                                decide (polling, at most waitMs), then judge again.
// A request still blocked by undecided holds after waitMs goes ahead anyway (fail open and counted, as when Redis is down): a
// refusal never makes another request 429, and the limit is exceeded only when holds take longer than waitMs to
// decide, by at most the number of requests that waited that long (docs/decisions.md).

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, limit, pendingTtl, final = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]), ARGV[5] == '1'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - pendingTtl)
local created = redis.call('ZCARD', KEYS[1])
if created >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window - now}
end
local blocked = created + redis.call('ZCARD', KEYS[2]) >= limit
if blocked and not final then return {2, 0} end
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('PEXPIRE', KEYS[2], pendingTtl)
if blocked then return {3, 0} end
return {1, 0}`;

/** The hold was created: its pending slot becomes a created one, stamped now. */
const CONFIRM = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1`;

type LimiterRedis = Redis & {
  holdRateAcquire(created: string, pending: string, windowMs: number, limit: number, member: string, pendingTtlMs: number, final: 0 | 1): Promise<[number, number]>;
  holdRateConfirm(created: string, pending: string, windowMs: number, member: string): Promise<number>;
};

export interface HoldRateOptions {
  /** How long a request blocked only by undecided holds waits for them before it goes ahead (ms). */
  waitMs?: number;
  /** How often it looks again meanwhile (ms). */
  pollMs?: number;
  /** A pending slot older than this is dropped: its request died before deciding (ms; beyond any hold's statement timeout). */
  pendingTtlMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The hold limiter in Redis (see above); fails open (and counts it) when Redis is down. */
export class HoldRateLimiter implements HoldLimiter {
  private readonly redis: LimiterRedis;
  private readonly waitMs: number;
  private readonly pollMs: number;
  private readonly pendingTtlMs: number;

  constructor(
    redis: Redis,
    private readonly limit: number,
    private readonly windowSeconds: number,
    private readonly onFailOpen: () => void,
    options: HoldRateOptions = {},
  ) {
    this.waitMs = options.waitMs ?? 1_000;
    this.pollMs = options.pollMs ?? 20;
    this.pendingTtlMs = options.pendingTtlMs ?? 30_000;
    // defineCommand sends EVALSHA (the script body only once per connection).
    if (!('holdRateAcquire' in redis)) redis.defineCommand('holdRateAcquire', { numberOfKeys: 2, lua: ACQUIRE });
    if (!('holdRateConfirm' in redis)) redis.defineCommand('holdRateConfirm', { numberOfKeys: 2, lua: CONFIRM });
    this.redis = redis as LimiterRedis;
  }

  /** Takes a pending slot for the customer's next hold, or throws RATE_LIMITED; lets the request through if Redis is down. */
  async acquire(customerId: number): Promise<HoldSlot> {
    // One hash tag: both keys of a customer live on one Redis Cluster slot, as a script needs.
    const created = `hold-rate:{${customerId}}`;
    const pending = `${created}:pending`;
    const member = randomUUID();
    const windowMs = this.windowSeconds * 1000;
    const deadline = Date.now() + this.waitMs;
    let answer: [number, number];
    try {
      for (;;) {
        const final = Date.now() >= deadline ? 1 : 0;
        answer = await this.redis.holdRateAcquire(created, pending, windowMs, this.limit, member, this.pendingTtlMs, final);
        if (answer[0] !== 2) break;
        await sleep(this.pollMs);
      }
    } catch (err) {
      return this.failOpen(err);
    }
    if (answer[0] === 3) {
      // Admitted past undecided holds after waitMs: the bounded overshoot, counted as a fail-open.
      this.onFailOpen();
      logger.warn({ customerId, waitMs: this.waitMs }, 'hold rate limiter: holds in flight still undecided; letting the request through');
    } else if (answer[0] !== 1) {
      const retryAfterSeconds = Math.max(1, Math.ceil(answer[1] / 1000));
      throw new DomainError('RATE_LIMITED', `at most ${this.limit} holds per ${this.windowSeconds} s`, { retryAfterSeconds });
    }
    return {
      confirm: async () => {
        await this.redis.holdRateConfirm(created, pending, windowMs, member).catch((err) => {
          // The hold exists; only its count is lost (the limit may be exceeded by this one hold).
          this.onFailOpen();
          logger.warn({ err: String(err) }, 'hold rate limiter could not count a created hold');
        });
      },
      release: async () => void (await this.redis.zrem(pending, member).catch(() => 0)),
    };
  }

  private failOpen(err: unknown): HoldSlot {
    this.onFailOpen();
    logger.warn({ err: String(err) }, 'hold rate limiter unavailable; failing open');
    return { confirm: async () => {}, release: async () => {} };
  }
}
