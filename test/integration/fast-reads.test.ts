import { randomUUID } from 'node:crypto';
import { createServer, request, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, waitFor } from '../helpers/http.js';
import { addDays, stayApi } from '../helpers/stays.js';
import { createApp } from '../../api/app.js';
import { withFastReads } from '../../api/fast-reads.js';
import { createMetrics } from '../../api/metrics.js';
import { redisClient } from '../../shared/redis.js';

// GET /cars and GET /hotels/availability answered beside Koa (api/fast-reads.ts) must be indistinguishable from the
// Koa routes: for any request target and X-Request-Id, the server with the fast path and the Koa app alone answer the same status, headers and
// bytes. Each request is sent to both; the fast path's own count shows that it answered some and left others to Koa.

let h: Harness;
const city = `FR-${randomUUID().slice(0, 6)}`;
const servers: Server[] = [];
let withFast: string;
let koaOnly: string;
let delegated = 0;
const today = new Date().toISOString().slice(0, 10);

const listen = async (listener: RequestListener): Promise<string> => {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  h = await startHarness({ env: { SEARCH_CACHE_TTL_S: '10', SEARCH_INDEX: 'on' } });
  const host = h.token(901, 'host');
  for (let i = 0; i < 12; i++) {
    const r = await h.req('POST', '/cars', {
      token: host, body: { plate: `FR-${i}-${randomUUID().slice(0, 6)}`, model: 'Ω "quoted"', city, dailyPrice: 300_000 + 1_000 * (i % 4), depositAmount: 1_000, turnaroundMinutes: 30 },
    });
    expect(r.status, r.text).toBe(201);
  }
  const stays = stayApi(h);
  const hotel = await stays.hotel({ city, name: 'Khách sạn "Ω"' });
  for (let i = 0; i < 4; i++) {
    const rt = await stays.roomType(hotel.id, 1_000_000 + i, `Room ${i} "q"`);
    await stays.setInventory(rt.id, today, addDays(today, 40), 1 + i);
  }
  const redis = redisClient(h.config, 'request', { keyPrefix: h.config.REDIS_KEY_PREFIX });
  redis.on('error', () => {});
  const deps = { ...h.deps, redis, metrics: createMetrics(), searchIndex: h.searchIndex };
  const koa = createApp(deps).callback();
  koaOnly = await listen(koa);
  withFast = await listen(withFastReads(deps, (req, res) => {
    delegated++;
    koa(req, res);
  }));
  await waitFor(async () => (await get(withFast, `/cars?city=${city}&from=${inHours(30)}&to=${inHours(32)}`)).body.length > 100, 10_000);
  await waitFor(async () => (await get(withFast, `/hotels/availability?city=${city}&checkIn=${addDays(today, 2)}&checkOut=${addDays(today, 4)}`)).body.length > 100, 10_000);
});
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  await h?.close();
});

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** One GET with the target as given (no normalisation by a client library). */
function get(base: string, target: string, requestId?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = request(`${base}/`, { path: target, method: 'GET', headers: requestId === undefined ? {} : { 'x-request-id': requestId } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: { ...res.headers }, body: Buffer.concat(chunks).toString('utf8') }));
    });
    r.on('error', reject);
    r.end();
  });
}

/** Both servers' answers to the same request: equal but for the Date header (and a minted request id). */
async function agree(target: string, requestId?: string): Promise<{ fast: boolean; status: number }> {
  const before = delegated;
  const [a, b] = [await get(withFast, target, requestId), await get(koaOnly, target, requestId)];
  const fast = delegated === before;
  const comparable = (x: Answer) => {
    const { date: _d, ...headers } = x.headers;
    if (requestId === undefined || x.headers['x-request-id'] !== requestId) headers['x-request-id'] = typeof headers['x-request-id'];
    return { status: x.status, headers, body: x.body };
  };
  expect(comparable(a), target).toEqual(comparable(b));
  return { fast, status: a.status };
}

describe('GET /hotels/availability beside Koa', () => {
  it('answers a plain availability search itself, and leaves the rest to Koa; the servers agree on each', async () => {
    const target = `/hotels/availability?city=${city}&checkIn=${addDays(today, 3)}&checkOut=${addDays(today, 5)}&rooms=2`;
    expect(await agree(target, 'fixed-id-3')).toEqual({ fast: true, status: 200 });
    expect(JSON.parse((await get(withFast, target)).body).roomTypes).toHaveLength(3);
    for (const refused of [
      `/hotels/availability?city=${city}&checkIn=${addDays(today, 1)}&checkOut=${addDays(today, 32)}`, // 31 nights
      `/hotels/availability?city=${city}&checkIn=${addDays(today, 5)}&checkOut=${addDays(today, 5)}`, // no night
      `/hotels/availability?city=${city}&checkIn=${addDays(today, 5)}&checkOut=${addDays(today, 3)}`,
      `/hotels/availability?city=${city}&city=${city}&checkIn=${addDays(today, 1)}&checkOut=${addDays(today, 3)}`,
    ]) expect(await agree(refused, 'fixed-id-4'), refused).toEqual({ fast: false, status: 400 });
    let seed = 61220;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return (seed >>> 16) % n; // the high bits: an LCG's low bits repeat with a short period
    };
    const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)]!;
    const dates = [addDays(today, 1), addDays(today, 2), addDays(today, 9), addDays(today, 40), addDays(today, -3), addDays(today, 33), '2031-02-30', '0000-01-01', '2031-1-01', 'x', ''];
    const outcomes = { fast: 0, koa: 0 };
    for (let i = 0; i < 150; i++) {
      const valid = rnd(2) === 0;
      const parts: string[] = [];
      if (rnd(10)) parts.push(`city=${valid ? city : pick([city, 'NOWHERE', '', 'x'.repeat(51)])}`);
      if (rnd(10)) parts.push(`checkIn=${valid ? addDays(today, 1 + rnd(3)) : pick(dates)}`);
      if (rnd(10)) parts.push(`checkOut=${valid ? addDays(today, 5 + rnd(3)) : pick(dates)}`);
      if (rnd(2)) parts.push(`rooms=${valid ? pick(['1', '2', '4', '100']) : pick(['0', '101', '1.5', '', 'a', '%203'])}`);
      if (!rnd(8)) parts.push(`${pick(['city', 'checkIn', 'rooms', 'other'])}=${pick(['1', city, addDays(today, 2)])}`);
      const target = `${pick(['/hotels/availability?', '/hotels/availability?', '/hotels/availability/?'])}${parts.join('&')}`;
      const { fast } = await agree(target, pick([undefined, 'id-b', '']));
      outcomes[fast ? 'fast' : 'koa']++;
    }
    expect(outcomes.fast).toBeGreaterThan(15);
    expect(outcomes.koa).toBeGreaterThan(15);
  }, 60_000);
});

describe('GET /cars beside Koa', () => {
  it('answers a plain search itself, with the Koa route\'s status, headers and bytes', async () => {
    const target = `/cars?city=${city}&from=${inHours(30)}&to=${inHours(33)}&limit=5`;
    expect(await agree(target, 'fixed-id-1')).toEqual({ fast: true, status: 200 });
    expect(await agree(target)).toEqual({ fast: true, status: 200 });
    const body = JSON.parse((await get(withFast, target)).body);
    expect(body.cars).toHaveLength(5);
  });

  it('leaves to Koa what it cannot answer for certain, and the two servers still agree', async () => {
    const [from, to] = [inHours(30), inHours(34)];
    const cases = [
      `/cars/?city=${city}&from=${from}&to=${to}`, // trailing slash
      `/cars?city=${city}&city=${city}&from=${from}&to=${to}`, // a repeated key: an array
      `/cars?city=${city}&from=${to}&to=${from}`, // to before from
      `/cars?city=${city}&from=${from}&to=${inHours(30 + 24 * 31)}`, // over 30 days
      `/cars?city=${city}&from=${inHours(-5)}&to=${to}`, // in the past: an empty list
      `/cars?city=${city}&from=${from}`, // no to
      `/cars?city=${city}&from=${from}&to=${to}&limit=0`,
      `/cars?city=${city}&from=${from}&to=${to}&x=#&limit=1`, // Koa reads no query past a fragment
      `/cars?city=${city}&from=not-a-date&to=${to}`,
      `/cars`,
    ];
    for (const target of cases) expect((await agree(target, 'fixed-id-2')).fast, target).toBe(false);
  });

  it('a fast read that throws is answered by Koa (its errors middleware: a 500), and the process lives on', async () => {
    const index = h.searchIndex!;
    const broken = {
      ...h.deps,
      searchIndex: {
        cars: () => { throw new Error('walk broken'); }, stays: (day: number) => index.stays(day), catchUp: () => index.catchUp(),
        builtOrGaveUp: (ms: number) => index.builtOrGaveUp(ms),
      },
    };
    const redis = redisClient(h.config, 'request', { keyPrefix: h.config.REDIS_KEY_PREFIX });
    redis.on('error', () => {});
    const deps = { ...broken, redis, metrics: createMetrics() };
    const base = await listen(withFastReads(deps, createApp(deps).callback()));
    try {
      const r = await get(base, `/cars?city=${city}&from=${inHours(30)}&to=${inHours(33)}`);
      expect(r.status).toBe(500);
      expect(JSON.parse(r.body).error.code).toBe('INTERNAL');
    } finally {
      redis.disconnect();
    }
  });

  it('agrees with Koa on arbitrary request targets, answering the valid ones itself', async () => {
    let seed = 20261206;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return (seed >>> 16) % n; // the high bits: an LCG's low bits repeat with a short period
    };
    const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)]!;
    const cities = [city, encodeURIComponent(city), 'NOWHERE', '', '%', '%E2%82', 'a+b', 'x'.repeat(51), encodeURIComponent('Hà Nội')];
    const instants = [inHours(30), inHours(31), inHours(40), inHours(-1), inHours(30 + 24 * 30), inHours(30 + 24 * 30 + 1),
      '2030-02-30T10:00:00Z', '2030-01-01T10:00:00+07:00', '2030-01-01', 'x', '', encodeURIComponent(inHours(35))];
    const limits = ['1', '50', '200', '201', '0', '-1', '1.5', '%207', '07', '', 'abc'];
    const requestIds = [undefined, 'id-a', '', ' bad ', 'x'.repeat(201), 'é'];
    const outcomes = { fast: 0, koa: 0 };
    for (let i = 0; i < 250; i++) {
      const parts: string[] = [];
      // Half start from a valid search (then perhaps broken below), half from arbitrary values.
      const valid = rnd(2) === 0;
      if (rnd(10)) parts.push(`city=${valid ? city : pick(cities)}`);
      if (rnd(10)) parts.push(`from=${valid ? inHours(30 + rnd(5)) : pick(instants)}`);
      if (rnd(10)) parts.push(`to=${valid ? inHours(36 + rnd(5)) : pick(instants)}`);
      if (rnd(2)) parts.push(`limit=${valid ? pick(['1', '3', '50', '200']) : pick(limits)}`);
      if (!rnd(8)) parts.push(`${pick(['city', 'from', 'to', 'limit', 'other'])}=${pick(['1', city, inHours(32)])}`);
      if (!rnd(6)) parts.push(pick(['extra=1', 'flag', '=x', '&&']));
      for (let k = parts.length - 1; k > 0; k--) {
        const j = rnd(k + 1);
        [parts[k], parts[j]] = [parts[j]!, parts[k]!];
      }
      const target = `${pick(['/cars?', '/cars?', '/cars?', '/cars/?', '/Cars?'])}${parts.join('&')}`;
      const { fast } = await agree(target, pick(requestIds));
      outcomes[fast ? 'fast' : 'koa']++;
    }
    // Both sides were reached (the generator is not all valid, nor all refused).
    expect(outcomes.fast).toBeGreaterThan(20);
    expect(outcomes.koa).toBeGreaterThan(20);
  }, 60_000);
});
