import { randomUUID } from 'node:crypto';
import type { RedisClient as Redis } from '../shared/redis.js';
import { DomainError } from '../shared/domain/errors.js';
import { logger } from '../shared/logger.js';
import type { HoldLimiter, HoldSlot } from '../shared/usecases/holds.js';
import type { ApiDeps } from './context.js';

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
//
// The acquires of one turn of the event loop (the requests read in one poll of the sockets) go to Redis as one
// pipeline, sent on the next turn (setImmediate): under load, one write for several requests instead of one each
// (the acquire's write was the API's largest single cost per hold at 2,400 holds/s). On a Redis Cluster each goes alone.
//
// A slot's decision (confirm or release) needs no answer: the request does not wait for it. The decisions of one turn
// go to Redis as one pipeline on the next (one write; on a Redis Cluster one command each, since a pipeline must stay
// on one slot). Until it lands the slot still counts as undecided, so the limit errs on the strict side: a request of
// the same customer meanwhile waits for it (pollMs) rather than slipping past. A stopping API awaits settled()
// before it closes Redis; a crashed one loses at most the decisions of its last turn (an uncounted hold: the limit
// exceeded by it, as when Redis is down).

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

/** One acquire, waiting for its turn's pipeline. */
interface Ask {
  args: [created: string, pending: string, windowMs: number, limit: number, member: string, pendingTtlMs: number, final: 0 | 1];
  resolve(answer: [number, number]): void;
  reject(err: unknown): void;
}

/** One slot's decision, waiting to be sent. */
interface Decision {
  confirm: boolean;
  created: string;
  pending: string;
  member: string;
  done(): void;
}

/** The API's limiter: HOLD_RATE_LIMIT holds per HOLD_RATE_WINDOW_S per customer, fail-opens counted in its metric. */
export const holdRateLimiter = (deps: Pick<ApiDeps, 'redis' | 'config' | 'metrics'>): HoldRateLimiter =>
  new HoldRateLimiter(deps.redis, deps.config.HOLD_RATE_LIMIT, deps.config.HOLD_RATE_WINDOW_S, () => deps.metrics.rateLimiterFailOpen.inc());

/** The hold limiter in Redis (see above); fails open (and counts it) when Redis is down. */
export class HoldRateLimiter implements HoldLimiter {
  private readonly redis: LimiterRedis;
  private readonly waitMs: number;
  private readonly pollMs: number;
  private readonly pendingTtlMs: number;
  private asks: Ask[] = [];
  private decisions: Decision[] = [];
  /** Decisions sent and not answered yet (settled() waits for them). */
  private readonly sending = new Set<Promise<void>>();

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
        answer = await this.ask([created, pending, windowMs, this.limit, member, this.pendingTtlMs, final]);
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
    const decide = (confirm: boolean) => new Promise<void>((done) => this.decide({ confirm, created, pending, member, done }));
    return { confirm: () => decide(true), release: () => decide(false) };
  }

  /** The acquire script's answer, asked in this turn's pipeline. */
  private ask(args: Ask['args']): Promise<[number, number]> {
    return new Promise((resolve, reject) => {
      if (this.asks.push({ args, resolve, reject }) === 1) setImmediate(() => this.sendAsks());
    });
  }

  private sendAsks(): void {
    const batch = this.asks;
    this.asks = [];
    if (this.isCluster() || batch.length === 1) {
      for (const a of batch) this.redis.holdRateAcquire(...a.args).then(a.resolve, a.reject);
      return;
    }
    const pipeline = this.redis.pipeline() as ReturnType<Redis['pipeline']> & Pick<LimiterRedis, 'holdRateAcquire'>;
    for (const a of batch) pipeline.holdRateAcquire(...a.args);
    pipeline.exec().then(
      (results) => batch.forEach((a, i) => {
        const [err, answer] = results?.[i] ?? [new Error('no answer in the pipeline')];
        if (err) a.reject(err);
        else a.resolve(answer as [number, number]);
      }),
      (err) => batch.forEach((a) => a.reject(err)),
    );
  }

  /** A Redis Cluster client: a pipeline must stay on one slot, so each command goes alone. */
  private isCluster(): boolean {
    return 'isCluster' in this.redis && this.redis.isCluster === true;
  }

  /** Queues a slot's decision; its promise settles once Redis has it (or it failed: see send). */
  private decide(d: Decision): void {
    if (this.decisions.push(d) === 1) setImmediate(() => this.sendDecisions());
  }

  /** Resolves once every decision made so far has been answered (a stopping API, before it closes Redis). */
  async settled(): Promise<void> {
    if (this.decisions.length) this.sendDecisions();
    await Promise.all(this.sending);
  }

  /** Sends the gathered decisions; never rejects (a lost confirm is counted as a fail-open, a lost release is harmless). */
  private sendDecisions(): void {
    const batch = this.decisions;
    if (batch.length === 0) return;
    this.decisions = [];
    const windowMs = this.windowSeconds * 1000;
    const lost = (d: Decision, err: unknown) => {
      if (d.confirm) {
        // The hold exists; only its count is lost (the limit may be exceeded by this one hold).
        this.onFailOpen();
        logger.warn({ err: String(err) }, 'hold rate limiter could not count a created hold');
      }
    };
    const track = (p: Promise<unknown>) => {
      const settled = p.then(() => {}, () => {});
      this.sending.add(settled);
      void settled.finally(() => this.sending.delete(settled));
    };
    if (this.isCluster()) {
      for (const d of batch) {
        const sent = d.confirm ? this.redis.holdRateConfirm(d.created, d.pending, windowMs, d.member) : this.redis.zrem(d.pending, d.member);
        track(sent.catch((err) => lost(d, err)).finally(d.done));
      }
      return;
    }
    const pipeline = this.redis.pipeline() as ReturnType<Redis['pipeline']> & Pick<LimiterRedis, 'holdRateConfirm'>;
    for (const d of batch) {
      if (d.confirm) pipeline.holdRateConfirm(d.created, d.pending, windowMs, d.member);
      else pipeline.zrem(d.pending, d.member);
    }
    track(pipeline.exec()
      .then((results) => batch.forEach((d, i) => results?.[i]?.[0] && lost(d, results[i]![0])))
      .catch((err) => batch.forEach((d) => lost(d, err)))
      .finally(() => batch.forEach((d) => d.done())));
  }

  private failOpen(err: unknown): HoldSlot {
    this.onFailOpen();
    logger.warn({ err: String(err) }, 'hold rate limiter unavailable; failing open');
    return { confirm: async () => {}, release: async () => {} };
  }
}
