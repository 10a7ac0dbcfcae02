import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { token } from '../helpers/http.js';
import { hostToken, periods, withCarHarness } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';

// Who may call what: bearer tokens, roles, and bookings that are not yours (404, never a leak).
let h: Harness;
let carId: number;
const period = periods();
withCarHarness((f) => ({ h, carId } = f));

describe('authorization', () => {
  it('another customer sees 404, the car host and operators see the booking, anonymous 401', async () => {
    const owner = newCustomer(h).token;
    const b = await h.req('POST', '/bookings', { token: owner, body: { carId, ...period() } });
    const path = `/bookings/${b.json.bookingId}`;
    expect((await h.req('GET', path, { token: owner })).status).toBe(200);
    expect((await h.req('GET', path, { token: newCustomer(h).token })).status).toBe(404);
    expect((await h.req('GET', path, { token: hostToken(h) })).status).toBe(200);
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
    const c = await h.req('POST', '/cars', { token: newCustomer(h).token, body });
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
    for (const t of [hostToken(h), h.token(1, 'operator')]) {
      const r = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() } });
      expect([r.status, r.json?.error?.code], r.text).toEqual([403, 'FORBIDDEN']);
    }
    const owner = newCustomer(h).token;
    const b = await h.req('POST', '/bookings', { token: owner, body: { carId, ...period() } });
    expect(b.status, b.text).toBe(201);
    for (const action of ['pickup', 'return']) {
      const r = await h.req('POST', `/bookings/${b.json.bookingId}/${action}`, { token: owner });
      expect([r.status, r.json?.error?.code], `${action}: ${r.text}`).toEqual([403, 'FORBIDDEN']);
    }
    expect(await h.sql(`SELECT count(*)::int AS n FROM booking WHERE car_id = $1 AND status <> 'HOLD'`, [carId]).then((r) => r.rows[0].n)).toBe(0);
  });
});

describe('roles are refused before the input is read', () => {
  it('403 for a host holding, a customer listing a car, a customer picking up, a host paying', async () => {
    const host = hostToken(h), customer = h.token(77, 'customer');
    expect((await h.req('POST', '/bookings', { token: host, body: { nonsense: true } })).status).toBe(403);
    expect((await h.req('POST', '/cars', { token: customer, body: {} })).status).toBe(403);
    expect((await h.req('POST', '/bookings/abc/pickup', { token: customer })).status).toBe(403);
    expect((await h.req('POST', '/bookings/abc/return', { token: customer })).status).toBe(403);
    expect((await h.req('GET', '/bookings/1/pay', { token: host })).status).toBe(403);
  });

  it('a sub beyond 2^53 is not a valid identity', async () => {
    const t = token(h.config.JWT_SECRET, { sub: '9007199254740993', role: 'customer' });
    expect((await h.req('GET', '/bookings/1', { token: t })).status).toBe(401);
  });
});
