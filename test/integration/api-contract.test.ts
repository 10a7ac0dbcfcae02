import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, token } from '../helpers/http.js';

let h: Harness;
let carId: number;
let customer = 30_000;
const nextCustomer = () => h.token(++customer, 'customer');
let slot = 0;
/** A distinct future period per call, so holds never collide unless a test wants them to. */
const period = () => {
  slot += 1;
  return { from: inHours(24 + slot * 10), to: inHours(26 + slot * 10) };
};
const countBookings = async () => (await h.sql('SELECT count(*)::int AS n FROM booking')).rows[0].n as number;

beforeAll(async () => {
  h = await startHarness();
  const car = await h.req('POST', '/cars', {
    token: h.token(900, 'host'),
    body: { plate: 'API-1', model: 'Vios', city: 'SGN', dailyPrice: 700000, depositAmount: 1500000 },
  });
  carId = car.json.id;
});
afterAll(async () => h?.close());

describe('idempotency', () => {
  it('replays the first answer with Idempotent-Replayed and creates nothing', async () => {
    const t = nextCustomer();
    const body = { carId, ...period() };
    const first = await h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-1' } });
    expect(first.status).toBe(201);
    const before = await countBookings();
    const again = await h.req('POST', '/bookings', { token: t, body: { to: body.to, from: body.from, carId }, headers: { 'idempotency-key': 'k-1' } });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(await countBookings()).toBe(before);
  });

  it('refuses the same key with a different body: 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const t = nextCustomer();
    await h.req('POST', '/bookings', { token: t, body: { carId, ...period() }, headers: { 'idempotency-key': 'k-2' } });
    const r = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() }, headers: { 'idempotency-key': 'k-2' } });
    expect(r.status).toBe(422);
    expect(r.json.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('scopes keys to the customer', async () => {
    const a = await h.req('POST', '/bookings', { token: nextCustomer(), body: { carId, ...period() }, headers: { 'idempotency-key': 'shared' } });
    const b = await h.req('POST', '/bookings', { token: nextCustomer(), body: { carId, ...period() }, headers: { 'idempotency-key': 'shared' } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.json.bookingId).not.toBe(b.json.bookingId);
  });

  it('concurrent duplicates: one creates, the others get 409 IDEMPOTENCY_IN_PROGRESS or the replay; one booking', async () => {
    const t = nextCustomer();
    const body = { carId, ...period() };
    const before = await countBookings();
    const replies = await Promise.all(Array.from({ length: 10 }, () =>
      h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-race' } })));
    const created = replies.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.json.bookingId)).size).toBe(1);
    for (const r of replies.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.json.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    }
    expect(await countBookings()).toBe(before + 1);
  });

  it('remembers a refusal: the replay of a 409 is the same 409', async () => {
    const body = { carId, ...period() };
    expect((await h.req('POST', '/bookings', { token: nextCustomer(), body })).status).toBe(201);
    const t = nextCustomer();
    const first = await h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-409' } });
    expect(first.status).toBe(409);
    const again = await h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-409' } });
    expect(again.status).toBe(409);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
  });

  it('rejects keys over 255 characters', async () => {
    const r = await h.req('POST', '/bookings', { token: nextCustomer(), body: { carId, ...period() }, headers: { 'idempotency-key': 'x'.repeat(256) } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('VALIDATION');
  });
});

describe('hold rate limit', () => {
  it('the 4th hold in the window is 429 with Retry-After; refusals and replays do not count', async () => {
    const t = nextCustomer();
    const taken = { carId, ...period() };
    await h.req('POST', '/bookings', { token: nextCustomer(), body: taken });
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
});

describe('authorization', () => {
  it('another customer sees 404, the car host and operators see the booking, anonymous 401', async () => {
    const owner = nextCustomer();
    const b = await h.req('POST', '/bookings', { token: owner, body: { carId, ...period() } });
    const path = `/bookings/${b.json.bookingId}`;
    expect((await h.req('GET', path, { token: owner })).status).toBe(200);
    expect((await h.req('GET', path, { token: nextCustomer() })).status).toBe(404);
    expect((await h.req('GET', path, { token: h.token(900, 'host') })).status).toBe(200);
    expect((await h.req('GET', path, { token: h.token(901, 'host') })).status).toBe(404);
    expect((await h.req('GET', path, { token: h.token(1, 'operator') })).status).toBe(200);
    const anon = await h.req('GET', path);
    expect(anon.status).toBe(401);
    expect(anon.json.error.code).toBe('UNAUTHENTICATED');
    expect((await h.req('GET', '/bookings/abc', { token: owner })).status).toBe(404);
    expect((await h.req('GET', '/bookings/0', { token: owner })).status).toBe(404);
  });

  it('customers cannot create cars (403); operators must name the host', async () => {
    const body = { plate: 'AUTH-1', model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 1 };
    const c = await h.req('POST', '/cars', { token: nextCustomer(), body });
    expect(c.status).toBe(403);
    expect(c.json.error.code).toBe('FORBIDDEN');
    const op = await h.req('POST', '/cars', { token: h.token(1, 'operator'), body });
    expect(op.status).toBe(400);
    const ok = await h.req('POST', '/cars', { token: h.token(1, 'operator'), body: { ...body, hostId: 77 } });
    expect(ok.status).toBe(201);
    expect(ok.json.hostId).toBe(77);
    const dup = await h.req('POST', '/cars', { token: h.token(77, 'host'), body });
    expect(dup.status).toBe(409);
    expect(dup.json.error.code).toBe('ALREADY_EXISTS');
  });

  it('rejects bad tokens: wrong secret, expired, bad role, non-numeric sub', async () => {
    const bad = [
      token('wrong', { sub: '5', role: 'customer' }),
      token(h.config.JWT_SECRET, { sub: '5', role: 'customer' }, -10),
      token(h.config.JWT_SECRET, { sub: '5', role: 'admin' }),
      token(h.config.JWT_SECRET, { sub: 'bob', role: 'customer' }),
    ];
    for (const t of bad) {
      const r = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() } });
      expect(r.status).toBe(401);
    }
  });

  it('hosts and operators may not hold; customers may not pick up or return', async () => {
    const r = await h.req('POST', '/bookings', { token: h.token(900, 'host'), body: { carId, ...period() } });
    expect(r.status).toBe(403);
    const b = await h.req('POST', '/bookings', { token: nextCustomer(), body: { carId, ...period() } });
    expect((await h.req('POST', `/bookings/${b.json.bookingId}/pickup`, { token: h.token(customer, 'customer') })).status).toBe(403);
  });
});

describe('invalid input → 400 VALIDATION and nothing written', () => {
  const cases: [string, () => { raw?: string; body?: unknown; headers?: Record<string, string> }][] = [
    ['missing fields', () => ({ body: { carId } })],
    ['from ≥ to', () => ({ body: { carId, from: inHours(30), to: inHours(30) } })],
    ['past from', () => ({ body: { carId, from: inHours(-1), to: inHours(3) } })],
    ['span over 30 days', () => ({ body: { carId, from: inHours(24), to: inHours(24 + 30 * 24 + 1) } })],
    ['instant without offset', () => ({ body: { carId, from: '2031-01-01T10:00:00', to: '2031-01-01T12:00:00' } })],
    ['wrong types', () => ({ body: { carId: '1', from: 5, to: true } })],
    ['non-positive id', () => ({ body: { carId: -3, from: inHours(30), to: inHours(31) } })],
    ['non-integer id', () => ({ body: { carId: 1.5, from: inHours(30), to: inHours(31) } })],
    ['non-JSON', () => ({ raw: '{"carId": 1,', headers: { 'content-type': 'application/json' } })],
    ['JSON array', () => ({ body: [1, 2] })],
    ['empty body', () => ({ raw: '' })],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const before = await countBookings();
      const r = await h.req('POST', '/bookings', { token: nextCustomer(), ...make() });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('VALIDATION');
      expect(typeof r.json.error.message).toBe('string');
      expect(await countBookings()).toBe(before);
    });
  }

  it('body over 1 MiB → 413 VALIDATION with details.field = body', async () => {
    const r = await h.req('POST', '/bookings', { token: nextCustomer(), raw: JSON.stringify({ carId, pad: 'x'.repeat(1024 * 1024) }), headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(413);
    expect(r.json.error).toMatchObject({ code: 'VALIDATION', details: { field: 'body' } });
  });

  it('search validation: missing city, from ≥ to, limit over 200', async () => {
    for (const q of ['from=2031-01-01T00:00:00Z&to=2031-01-02T00:00:00Z', `city=HN&from=${encodeURIComponent(inHours(5))}&to=${encodeURIComponent(inHours(4))}`, `city=HN&from=${encodeURIComponent(inHours(5))}&to=${encodeURIComponent(inHours(6))}&limit=201`]) {
      const r = await h.req('GET', `/cars?${q}`);
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('VALIDATION');
    }
  });
});

describe('lifecycle', () => {
  it('cancel twice → 409 INVALID_STATE; HOLD cancel refunds 0', async () => {
    const t = nextCustomer();
    const b = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() } });
    const first = await h.req('POST', `/bookings/${b.json.bookingId}/cancel`, { token: t, body: { reason: 'changed plans' } });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ bookingId: b.json.bookingId, status: 'CANCELLED', refundAmount: 0, currency: 'VND' });
    const second = await h.req('POST', `/bookings/${b.json.bookingId}/cancel`, { token: t, body: {} });
    expect(second.status).toBe(409);
    expect(second.json.error.code).toBe('INVALID_STATE');
    const events = await h.sql(`SELECT topic FROM outbox WHERE message_key = $1 ORDER BY id`, [String(b.json.bookingId)]);
    expect(events.rows.map((r) => r.topic)).toEqual(['booking.held', 'booking.cancelled']);
  });

  it('pickup and return need CONFIRMED / ON_TRIP', async () => {
    const b = await h.req('POST', '/bookings', { token: nextCustomer(), body: { carId, ...period() } });
    const r = await h.req('POST', `/bookings/${b.json.bookingId}/pickup`, { token: h.token(900, 'host') });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('INVALID_STATE');
    expect((await h.req('POST', `/bookings/${b.json.bookingId}/return`, { token: h.token(1, 'operator') })).status).toBe(409);
  });

  it('GET returns the contract shape', async () => {
    const t = nextCustomer();
    const p = period();
    const b = await h.req('POST', '/bookings', { token: t, body: { carId, ...p } });
    expect(b.json.paymentUrl).toBe(`${h.config.PUBLIC_BASE_URL}/bookings/${b.json.bookingId}/pay`);
    const g = await h.req('GET', `/bookings/${b.json.bookingId}`, { token: t });
    expect(g.json).toEqual({
      bookingId: b.json.bookingId, kind: 'car', status: 'HOLD', customerId: customer, carId, from: p.from, to: p.to,
      roomTypeId: null, checkIn: null, checkOut: null, rooms: null, depositAmount: 1500000, currency: 'VND',
      holdExpiresAt: b.json.holdExpiresAt, payment: null, refund: null,
    });
  });
});

describe('operations', () => {
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
    expect(r.text).toContain('outbox_lag_seconds');
  });
});
