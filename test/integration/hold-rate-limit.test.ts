import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { holdCar, periods, withCarHarness } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { placeHold, type HoldDeps } from '../../shared/usecases/holds.js';
import { HoldRateLimiter } from '../../api/hold-rate-limiter.js';
import { Redis } from 'ioredis';

// At most HOLD_RATE_LIMIT new holds per customer per window; only requests that create a hold count.
let h: Harness;
let carId: number;
const period = periods();
withCarHarness((f) => ({ h, carId } = f));

describe('hold rate limit', () => {
  it('the 4th hold in the window is 429 with Retry-After; refusals and replays do not count', async () => {
    const t = newCustomer(h).token;
    const taken = { carId, ...period() };
    await h.req('POST', '/bookings', { token: newCustomer(h).token, body: taken });
    // Refused requests (validation, 404, 409) do not use up the limit.
    expect((await h.req('POST', '/bookings', { token: t, body: { carId } })).status).toBe(400);
    expect((await h.req('POST', '/bookings', { token: t, body: { carId: 999_999, ...period() } })).status).toBe(404);
    expect((await h.req('POST', '/bookings', { token: t, body: taken })).status).toBe(409);
    const keyed = { carId, ...period() };
    for (let i = 0; i < 3; i++) {
      const r = i === 0
        ? await h.req('POST', '/bookings', { token: t, body: keyed, headers: { 'idempotency-key': 'rl' } })
        : await h.req('POST', '/bookings', { token: t, body: { carId, ...period() } });
      expect(r.status).toBe(201);
    }
    const replay = await h.req('POST', '/bookings', { token: t, body: keyed, headers: { 'idempotency-key': 'rl' } });
    expect(replay.status).toBe(201);
    const fourth = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() } });
    expect(fourth.status).toBe(429);
    expect(fourth.json.error.code).toBe('RATE_LIMITED');
    const retryAfter = Number(fourth.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(900);
  });

  it('validation comes before the limiter: a customer at the limit still gets 400 for a past from, not 429', async () => {
    const t = h.token(4242, 'customer');
    for (let i = 0; i < 3; i++) {
      const b = await holdCar(h);
      await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
      const r = await h.req('POST', '/bookings', { token: t, body: { carId: b.carId, from: inHours(300 + i), to: inHours(301 + i) } });
      expect(r.status).toBe(201);
    }
    const past = await h.req('POST', '/bookings', { token: t, body: { carId: 1, from: inHours(-2), to: inHours(1) } });
    expect(past.status).toBe(400);
    const fourth = await h.req('POST', '/bookings', { token: t, body: { carId: 1, from: inHours(400), to: inHours(401) } });
    expect(fourth.status).toBe(429);
  });

  it('a created hold is answered without waiting for its limiter count; a refused one without waiting for its release', async () => {
    // The limiter's decisions never settle here: a hold that waited for one would never be answered.
    const never = new Promise<void>(() => {});
    const calls: string[] = [];
    const deps: HoldDeps = {
      ...h.deps,
      holdLimiter: { acquire: async () => ({ confirm: () => { calls.push('confirm'); return never; }, release: () => { calls.push('release'); return never; } }) },
    };
    const actor = { role: 'customer' as const, id: 4343 };
    for (const keyed of [false, true]) {
      calls.length = 0;
      const { from, to } = period();
      const hold = placeHold(deps, actor, { kind: 'car', carId, from: new Date(from), to: new Date(to) },
        keyed ? { idempotencyKey: 'unwaited', body: { carId, from, to } } : { body: { carId, from, to } });
      const stuck = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`stuck after ${calls.join(', ')}`)), 10_000));
      const { outcome } = await Promise.race([hold, stuck]);
      expect(outcome.ok, JSON.stringify(outcome)).toBe(true);
      expect(calls, keyed ? 'with an Idempotency-Key (a transaction)' : 'the one-statement hold').toEqual(['confirm']);
    }
    // A refused hold confirms nothing: its slot is released.
    calls.length = 0;
    const taken = period();
    await placeHold(deps, actor, { kind: 'car', carId, from: new Date(taken.from), to: new Date(taken.to) }, { body: taken });
    await expect(placeHold(deps, actor, { kind: 'car', carId, from: new Date(taken.from), to: new Date(taken.to) }, { body: taken }))
      .rejects.toMatchObject({ code: 'CAR_UNAVAILABLE' });
    expect(calls).toEqual(['confirm', 'release']);
  });

  it('the acquires of one turn go to Redis as one pipeline, each judged on its own', async () => {
    const redis = new Redis('redis://127.0.0.1:6379/5', { keyPrefix: `${h.config.REDIS_KEY_PREFIX}turn:` });
    await redis.ping();
    const sizes: number[] = [];
    const pipeline = redis.pipeline.bind(redis);
    redis.pipeline = ((...args: Parameters<typeof pipeline>) => {
      const p = pipeline(...args);
      const exec = p.exec.bind(p);
      p.exec = ((...e: Parameters<typeof exec>) => {
        sizes.push(p.length);
        return exec(...e);
      }) as typeof exec;
      return p;
    }) as typeof redis.pipeline;
    try {
      const limiter = new HoldRateLimiter(redis as never, 3, 900, () => {}, { waitMs: 5_000, pollMs: 5 });
      // Customer 21 asks four times at once (limit 3), 22 and 23 once each: one turn, one pipeline of six.
      const asked = [21, 21, 21, 21, 22, 23].map((c) => limiter.acquire(c));
      const first = await Promise.all([asked[0]!, asked[1]!, asked[2]!, asked[4]!, asked[5]!]);
      expect(sizes[0]).toBe(6);
      // 21's fourth waits on its three undecided; once they are created it is refused.
      await Promise.all(first.slice(0, 3).map((slot) => slot.confirm()));
      await expect(asked[3]).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    } finally {
      redis.disconnect();
    }
  });

  /**
   * Counts the acquire scripts `redis` runs from now on, alone or in a pipeline (a pipeline copies the client's
   * script commands when it is made, and runs them with itself as `this`).
   */
  function countAsks(redis: Redis): () => number {
    let n = 0;
    const r = redis as unknown as { holdRateAcquire: (...a: unknown[]) => unknown };
    const original = r.holdRateAcquire;
    r.holdRateAcquire = function (this: unknown, ...a: unknown[]) {
      n++;
      return original.apply(this, a);
    };
    return () => n;
  }

  it('decisions not yet sent count as undecided: the next request of the customer waits for them, then is refused', async () => {
    const redis = new Redis('redis://127.0.0.1:6379/5', { keyPrefix: `${h.config.REDIS_KEY_PREFIX}unsent:` });
    let failOpen = 0;
    try {
      const limiter = new HoldRateLimiter(redis as never, 3, 900, () => failOpen++, { waitMs: 1_000, pollMs: 5 });
      // Three created and a fourth asked in the same turn, before their confirms are sent (they leave on the next turn,
      // after the ask): the fourth finds three undecided, waits, asks again and is refused.
      const full = await Promise.all([0, 1, 2].map(() => limiter.acquire(9)));
      const asks = countAsks(redis);
      const fourth = limiter.acquire(9);
      const confirmed = full.map((slot) => slot.confirm());
      expect(await redis.zcard('hold-rate:{9}')).toBe(0); // this connection's next command: no confirm has landed
      const started = Date.now();
      await expect(fourth).rejects.toMatchObject({ code: 'RATE_LIMITED' });
      expect(Date.now() - started).toBeLessThan(900); // decided by the landed confirms, not let through by the wait's end
      expect(asks()).toBeGreaterThanOrEqual(2);
      await Promise.all(confirmed);
      // Two created and one refused, asked past before the decisions are sent: it waits, then goes ahead (a refusal
      // never makes another request 429).
      const mixed = await Promise.all([0, 1, 2].map(() => limiter.acquire(10)));
      const next = limiter.acquire(10);
      const decided = [mixed[0]!.confirm(), mixed[1]!.confirm(), mixed[2]!.release()];
      await Promise.all([...decided, (await next).confirm()]);
      expect(failOpen).toBe(0);
      expect(await redis.zcard('hold-rate:{9}')).toBe(3);
      expect(await redis.zcard('hold-rate:{10}')).toBe(3);
      expect(await redis.zcard('hold-rate:{10}:pending')).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('concurrent holds of one customer: exactly the limit are created, the rest are 429', async () => {
    const t = newCustomer(h).token;
    const bodies = Array.from({ length: 12 }, () => ({ carId, ...period() }));
    const codes = (await Promise.all(bodies.map((body) => h.req('POST', '/bookings', { token: t, body })))).map((r) => r.status);
    expect(codes.filter((c) => c === 201)).toHaveLength(3);
    expect(codes.filter((c) => c === 429)).toHaveLength(9);
  });
});
