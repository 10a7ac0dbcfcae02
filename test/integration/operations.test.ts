import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../shared/db/migrate.js';
import { parseConfig } from '../../shared/config.js';
import { createDashboard } from '../../dashboards/server.js';
import { ADMIN_DB, startHarness, type Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { ROOT } from '../helpers/processes.js';

describe('migrations', () => {
  it('concurrent starts create the database once and apply each migration once', async () => {
    const name = `test_mig_${randomUUID().slice(0, 8)}`;
    const url = `postgres://postgres@127.0.0.1:5432/${name}`;
    await Promise.all(Array.from({ length: 4 }, () => migrate(url)));
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const { rows } = await c.query('SELECT name, count(*)::int AS n FROM pgmigrations GROUP BY name');
    await c.end();
    const files = readdirSync(path.join(ROOT, 'migrations')).filter((f) => f.endsWith('.sql'));
    expect(rows.map((r) => `${r.name}.sql`).sort()).toEqual(files.sort());
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const admin = new pg.Client({ connectionString: ADMIN_DB });
    await admin.connect();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  });
});

describe('dashboard', () => {
  it('bull-board needs HTTP Basic credentials', async () => {
    const config = parseConfig({ DASHBOARD_USER: 'ops', DASHBOARD_PASSWORD: 'pw', REDIS_URL: 'redis://127.0.0.1:6379/5', QUEUE_PREFIX: `d${Date.now()}` });
    const { app, close } = await createDashboard(config);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/queues`;
    try {
      expect((await fetch(base)).status).toBe(401);
      expect((await fetch(base, { headers: { authorization: `Basic ${Buffer.from('ops:wrong').toString('base64')}` } })).status).toBe(401);
      const ok = await fetch(base, { headers: { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('<html');
    } finally {
      server.close();
      await close();
    }
  });
});

describe('search cache', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { SEARCH_CACHE_TTL_S: '30' } });
  });
  afterAll(async () => h?.close());

  it('serves a cached answer within the TTL, while holds are still decided by the database', async () => {
    const car = await h.req('POST', '/cars', { token: h.token(3, 'host'), body: { plate: 'C-1', model: 'M', city: 'DAD', dailyPrice: 5, depositAmount: 5 } });
    const from = inHours(50), to = inHours(52);
    const q = `/cars?city=DAD&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    expect((await h.req('GET', q)).json.cars.map((c: { id: number }) => c.id)).toEqual([car.json.id]);
    expect((await h.req('POST', '/bookings', { token: h.token(7, 'customer'), body: { carId: car.json.id, from, to } })).status).toBe(201);
    // Up to SEARCH_CACHE_TTL_S stale, as the contract allows …
    expect((await h.req('GET', q)).json.cars).toHaveLength(1);
    // … but the hold itself is refused by the constraint.
    expect((await h.req('POST', '/bookings', { token: h.token(8, 'customer'), body: { carId: car.json.id, from, to } })).status).toBe(409);
    const m = await h.req('GET', '/metrics');
    expect(m.text).toMatch(/search_cache_total\{kind="cars",result="hit"\} 1/);
  });
});

describe('request ids, OpenAPI document and metrics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  it('echoes X-Request-Id or mints one; errors too', async () => {
    const mine = await h.req('GET', '/health', { headers: { 'x-request-id': 'abc-123' } });
    expect(mine.headers.get('x-request-id')).toBe('abc-123');
    const minted = await h.req('GET', '/nope');
    expect(minted.status).toBe(404);
    expect(minted.json.error.code).toBe('NOT_FOUND');
    expect(minted.headers.get('x-request-id')).toBeTruthy();
  });
  it('serves an OpenAPI document listing every contract path', async () => {
    const r = await h.req('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(r.json.openapi).toMatch(/^3\./);
    for (const p of ['/cars', '/hotels', '/hotels/availability', '/hotels/{hotelId}/room-types', '/room-types/{roomTypeId}/inventory',
      '/room-types/{roomTypeId}/inventory/audit', '/bookings', '/bookings/{id}', '/bookings/{id}/pay', '/bookings/{id}/cancel',
      '/bookings/{id}/pickup', '/bookings/{id}/return', '/payments/webhook', '/health', '/ready', '/metrics']) {
      expect(r.json.paths[p], p).toBeDefined();
    }
  });
  it('exposes metrics', async () => {
    const r = await h.req('GET', '/metrics');
    expect(r.text).toContain('http_request_duration_seconds');
    expect(r.text).toContain('bookings_total');
    expect(r.text).toContain('rate_limiter_fail_open_total');
    expect(r.text).toContain('queue_depth');
    // outbox_lag_seconds (a count and an age under one name) became one metric per measure, in honest units.
    for (const name of ['outbox_unpublished_events', 'outbox_oldest_unpublished_age_seconds', 'refunds_pending',
      'refunds_pending_oldest_age_seconds', 'refunds_pending_over_1h']) {
      expect(r.text).toMatch(new RegExp(`^${name} \\d`, 'm'));
    }
  });
  it('echoes any header-safe X-Request-Id', async () => {
    const r = await h.req('GET', '/health', { headers: { 'x-request-id': 'trace abc/42:x' } });
    expect(r.headers.get('x-request-id')).toBe('trace abc/42:x');
  });
  it('declares path parameters in the OpenAPI document', async () => {
    const r = await h.req('GET', '/openapi.json');
    expect(r.json.paths['/bookings/{id}'].get.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path', required: true }));
  });
});
