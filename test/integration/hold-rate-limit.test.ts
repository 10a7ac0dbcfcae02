import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { holdCar, periods, withCarHarness } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { placeHold, type HoldDeps } from '../../shared/usecases/holds.js';

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

  it('a created hold\'s slot is confirmed while its expiry job is added, not after it', async () => {
    // The add below waits for the confirm: one after the other, the hold could never be answered.
    let confirmed!: () => void;
    const confirming = new Promise<void>((resolve) => (confirmed = resolve));
    const calls: string[] = [];
    const deps: HoldDeps = {
      ...h.deps,
      jobs: { enqueue: async (requests) => { calls.push('add'); await confirming; return h.deps.jobs.enqueue(requests); } },
      holdLimiter: { acquire: async () => ({ confirm: async () => { calls.push('confirm'); confirmed(); }, release: async () => { calls.push('release'); } }) },
    };
    const actor = { role: 'customer' as const, id: 4343 };
    for (const keyed of [false, true]) {
      calls.length = 0;
      const { from, to } = period();
      const hold = placeHold(deps, actor, { kind: 'car', carId, from: new Date(from), to: new Date(to) },
        keyed ? { idempotencyKey: 'alongside', body: { carId, from, to } } : { body: { carId, from, to } });
      const stuck = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`stuck after ${calls.join(', ')}`)), 10_000));
      const { outcome } = await Promise.race([hold, stuck]);
      expect(outcome.ok, JSON.stringify(outcome)).toBe(true);
      expect(calls.sort(), keyed ? 'with an Idempotency-Key (a transaction)' : 'the one-statement hold').toEqual(['add', 'confirm']);
    }
    // A refused hold confirms nothing: its slot is released.
    calls.length = 0;
    const taken = period();
    await placeHold(deps, actor, { kind: 'car', carId, from: new Date(taken.from), to: new Date(taken.to) }, { body: taken });
    await expect(placeHold(deps, actor, { kind: 'car', carId, from: new Date(taken.from), to: new Date(taken.to) }, { body: taken }))
      .rejects.toMatchObject({ code: 'CAR_UNAVAILABLE' });
    expect(calls.slice(2)).toEqual(['release']);
  });

  it('concurrent holds of one customer: exactly the limit are created, the rest are 429', async () => {
    const t = newCustomer(h).token;
    const bodies = Array.from({ length: 12 }, () => ({ carId, ...period() }));
    const codes = (await Promise.all(bodies.map((body) => h.req('POST', '/bookings', { token: t, body })))).map((r) => r.status);
    expect(codes.filter((c) => c === 201)).toHaveLength(3);
    expect(codes.filter((c) => c === 429)).toHaveLength(9);
  });
});
