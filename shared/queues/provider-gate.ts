import type { Config } from '../config.js';
import type { ObligationKind } from '../domain/jobs.js';
import type { RedisClient } from '../redis.js';
import { QUEUES } from './registry.js';

// PSP_RATE_LIMIT provider calls per second per queue, across every process (CONTRACT "Jobs"): each call (each
// retry too) first takes the queue's next slot in Redis, one slot per 1.25/PSP_RATE_LIMIT s, so calls are spread
// evenly rather than let through in bursts. BullMQ's own limiter (set on the queue's workers too) counts job starts
// in fixed windows: up to twice its max can start within one second at a window's edge, and a job may make several
// calls; this gate paces the calls themselves. The 25 % margin absorbs the spread between taking a slot and the
// request reaching the provider. Redis unreachable: the call goes through (no job starts then anyway, but one
// already running finishes).
const MARGIN = 1.25;

// KEYS[1]: the queue's next free slot (ms, Redis's clock). ARGV[2] = 1: take the slot (0, or how long to wait for
// it); ARGV[2] = 0: push the next slot ARGV[1] ms away (a 429's Retry-After: no call of the queue before then).
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms = tonumber(ARGV[1])
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[2] == '0' then
  if now + ms > next then redis.call('SET', KEYS[1], now + ms, 'PX', ms + 1000) end
  return 0
end
if next > now then return next - now end
redis.call('SET', KEYS[1], now + ms, 'PX', math.ceil(ms * 2) + 1000)
return 0`;

type GateRedis = RedisClient & { pspGate(key: string, ms: number, take: '0' | '1'): Promise<number> };

export interface ProviderGate {
  /** Resolves once the queue's next call slot is this caller's. */
  take(): Promise<void>;
  /** No call of the queue before `ms` from now (the provider said 429 with Retry-After). */
  pause(ms: number): Promise<void>;
}

/** The gate of `kind`'s provider calls. */
export function providerGate(redis: RedisClient, config: Pick<Config, 'QUEUE_PREFIX' | 'PSP_RATE_LIMIT'>, kind: ObligationKind): ProviderGate {
  if (!('pspGate' in redis)) redis.defineCommand('pspGate', { numberOfKeys: 1, lua: SCRIPT });
  const r = redis as GateRedis;
  // In the queue's hash slot (a cluster keeps it beside the queue).
  const key = `${config.QUEUE_PREFIX}:${QUEUES[kind].name}:psp-next-call`;
  const intervalMs = (1000 / config.PSP_RATE_LIMIT) * MARGIN;
  return {
    async take() {
      for (;;) {
        const waitMs = await r.pspGate(key, intervalMs, '1').catch(() => 0);
        if (waitMs <= 0) return;
        await new Promise((res) => setTimeout(res, Math.min(waitMs, 1000)));
      }
    },
    pause: async (ms) => void (await r.pspGate(key, ms, '0').catch(() => 0)),
  };
}
