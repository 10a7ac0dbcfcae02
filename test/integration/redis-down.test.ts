import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';

// The API's Redis points at a closed port: search and holds keep working from PostgreSQL,
// the limiter fails open and says so in a metric, and readiness reports the outage.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { REDIS_URL: 'redis://127.0.0.1:1/0', SEARCH_CACHE_TTL_S: '30' } });
});
afterAll(async () => h?.close());

describe('Redis down', () => {
  it('holds still succeed (the database prevents double booking), fail-opens are counted, /ready is 503', async () => {
    const car = await h.req('POST', '/cars', { token: h.token(5, 'host'), body: { plate: 'RD-1', model: 'M', city: 'HUE', dailyPrice: 1, depositAmount: 10 } });
    expect(car.status).toBe(201);
    const t = h.token(42, 'customer');
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await h.req('POST', '/bookings', { token: t, body: { carId: car.json.id, from: inHours(30 + i * 10), to: inHours(31 + i * 10) } });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201]);
    const clash = await h.req('POST', '/bookings', { token: h.token(43, 'customer'), body: { carId: car.json.id, from: inHours(30), to: inHours(31) } });
    expect(clash.status).toBe(409);
    const s = await h.req('GET', `/cars?city=HUE&from=${encodeURIComponent(inHours(200))}&to=${encodeURIComponent(inHours(201))}`);
    expect(s.status).toBe(200);
    expect(s.json.cars).toHaveLength(1);
    const m = await h.req('GET', '/metrics');
    expect(m.text).toMatch(/rate_limiter_fail_open_total 6/);
    const ready = await h.req('GET', '/ready');
    expect(ready.status).toBe(503);
    expect(ready.json.error.code).toBe('UNAVAILABLE');
    expect((await h.req('GET', '/health')).status).toBe(200);
  });
});
