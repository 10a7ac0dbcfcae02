import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, token, type Reply } from '../helpers/http.js';
import { HOST_ID, newCar } from '../helpers/cars.js';
import { OPERATOR_ID } from '../helpers/bookings.js';
import { addDays, stayApi } from '../helpers/stays.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { ACCESS, CALLERS, ROLE_OF, routeKey, type Caller } from '../helpers/access-matrix.js';

// The access matrix (CONTRACT.md, written out in test/helpers/access-matrix.ts, not read from the routes): every
// route × every caller — anonymous, the owner, another customer, the car's host, another host, an operator — is
// carried out with a valid request and must answer as the contract says: its documented success, 401, 403 (a role
// that may not call), or 404 (someone else's booking or quote, never a leak); a refused call changes nothing it
// names. Protected routes answer 401 UNAUTHENTICATED to every bad credential. The webhook knows only its signature.
// Rows another branch brings are skipped, visibly, while the served /openapi.json does not list them.

const OWNER = 700;
const STRANGER = 701;
const MISSING = '999999999';

let h: Harness;
let served: Set<string>;
const fx = { carId: 0, bookingId: 0, quoteId: 0, hotelId: 0, roomTypeId: 0, ratePlanId: 0 };
const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
let seq = 0;

const SUB: Record<Exclude<Caller, 'anonymous'>, number> = { owner: OWNER, otherCustomer: STRANGER, carHost: HOST_ID, otherHost: HOST_ID + 1, operator: OPERATOR_ID };
const bearer = (c: Caller) => (c === 'anonymous' ? undefined : `Bearer ${h.token(SUB[c], ROLE_OF[c])}`);

/** One request of a route; `watch` reads what a refusal must leave as it was. */
interface Call {
  method: string;
  path: string;
  body?: unknown;
  watch?: () => Promise<unknown>;
}

const bookingRow = (id: number) => async () => (await h.sql(`SELECT to_jsonb(b) AS row FROM booking b WHERE id = $1`, [id])).rows[0]?.row;

/** A fresh car hold of the owner, on the fixture car, in one of the states a route needs. */
async function booking(state: 'HOLD' | 'CONFIRMED' | 'ON_TRIP' = 'HOLD'): Promise<{ id: number; from: string; to: string }> {
  const start = 24 * 30 + seq++ * 10;
  const [from, to] = [inHours(start), inHours(start + 3)];
  const r = await h.req('POST', '/bookings', { token: h.token(OWNER, 'customer'), body: { carId: fx.carId, from, to } });
  expect(r.status, r.text).toBe(201);
  if (state !== 'HOLD') expect((await signedWebhook(h, paymentSucceeded(r.json.bookingId, r.json.depositAmount))).status).toBe(200);
  if (state === 'ON_TRIP') expect((await h.req('POST', `/bookings/${r.json.bookingId}/pickup`, { token: h.token(OPERATOR_ID, 'operator') })).status).toBe(200);
  return { id: r.json.bookingId, from, to };
}
const onBooking = (method: string, action: string, state?: 'HOLD' | 'CONFIRMED' | 'ON_TRIP', body?: (b: { from: string; to: string }) => unknown) =>
  async (): Promise<Call> => {
    const b = await booking(state);
    return { method, path: `/bookings/${b.id}${action}`, body: body?.(b) ?? (method === 'GET' ? undefined : {}), watch: bookingRow(b.id) };
  };

/** A valid request of each route, for `caller`; keyed as ACCESS is. */
const REQUESTS: Record<string, (caller: Caller) => Promise<Call>> = {
  'GET /health': async () => ({ method: 'GET', path: '/health' }),
  'GET /ready': async () => ({ method: 'GET', path: '/ready' }),
  'GET /metrics': async () => ({ method: 'GET', path: '/metrics' }),
  'GET /openapi.json': async () => ({ method: 'GET', path: '/openapi.json' }),
  'GET /docs': async () => ({ method: 'GET', path: '/docs' }),
  'GET /docs/{asset}': async () => ({ method: 'GET', path: '/docs/init.js' }),
  'GET /cars': async () => ({ method: 'GET', path: `/cars?city=HN&from=${encodeURIComponent(inHours(48))}&to=${encodeURIComponent(inHours(50))}` }),
  'GET /hotels/availability': async () => ({ method: 'GET', path: `/hotels/availability?city=HCM&checkIn=${day(5)}&checkOut=${day(6)}` }),
  'POST /payments/webhook': async () => ({ method: 'POST', path: '/payments/webhook', body: paymentSucceeded(fx.bookingId, 1), watch: bookingRow(fx.bookingId) }),
  'POST /cars': async (c) => ({
    method: 'POST', path: '/cars',
    body: { plate: `AM-${seq++}`, model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 1, ...(c === 'operator' ? { hostId: HOST_ID } : {}) },
  }),
  'POST /hotels': async () => ({ method: 'POST', path: '/hotels', body: { name: 'Matrix', city: 'HCM', timezone: 'Asia/Ho_Chi_Minh' } }),
  'POST /hotels/{hotelId}/room-types': async () => ({ method: 'POST', path: `/hotels/${fx.hotelId}/room-types`, body: { name: 'Twin', depositAmount: 5 } }),
  'PUT /room-types/{roomTypeId}/inventory': async () => ({
    method: 'PUT', path: `/room-types/${fx.roomTypeId}/inventory`, body: { from: day(1), to: day(10), sellable: 3, reason: 'matrix' },
  }),
  'GET /room-types/{roomTypeId}/inventory': async () => ({ method: 'GET', path: `/room-types/${fx.roomTypeId}/inventory?from=${day(1)}&to=${day(3)}` }),
  'GET /room-types/{roomTypeId}/inventory/audit': async () => ({ method: 'GET', path: `/room-types/${fx.roomTypeId}/inventory/audit?from=${day(1)}&to=${day(3)}` }),
  'POST /room-types/{roomTypeId}/rate-plans': async () => ({ method: 'POST', path: `/room-types/${fx.roomTypeId}/rate-plans`, body: { name: 'Matrix' } }),
  'PUT /rate-plans/{ratePlanId}/calendar': async () => ({
    method: 'PUT', path: `/rate-plans/${fx.ratePlanId}/calendar`, body: { from: day(1), to: day(10), reason: 'matrix', price: 100 },
  }),
  'GET /rate-plans/{ratePlanId}/calendar': async () => ({ method: 'GET', path: `/rate-plans/${fx.ratePlanId}/calendar?from=${day(1)}&to=${day(3)}` }),
  'POST /quotes': async () => ({
    method: 'POST', path: '/quotes', body: { roomTypeId: fx.roomTypeId, ratePlanId: fx.ratePlanId, checkIn: day(2), checkOut: day(3) },
  }),
  'GET /quotes/{quoteId}': async () => ({ method: 'GET', path: `/quotes/${fx.quoteId}` }),
  'POST /bookings': async () => {
    const start = 24 * 30 + seq++ * 10;
    return { method: 'POST', path: '/bookings', body: { carId: fx.carId, from: inHours(start), to: inHours(start + 2) } };
  },
  'GET /bookings/{id}': onBooking('GET', ''),
  'GET /bookings/{id}/pay': onBooking('GET', '/pay'),
  'POST /bookings/{id}/cancel': onBooking('POST', '/cancel'),
  'POST /bookings/{id}/pickup': onBooking('POST', '/pickup', 'CONFIRMED'),
  'POST /bookings/{id}/return': onBooking('POST', '/return', 'ON_TRIP'),
  'POST /bookings/{id}/change': onBooking('POST', '/change', 'HOLD', (b) => ({ to: new Date(new Date(b.to).getTime() + 3_600_000).toISOString() })),
  'GET /bookings/{id}/timeline': onBooking('GET', '/timeline'),
};

const send = (call: Call, authorization: string | undefined): Promise<Reply> =>
  h.req(call.method, call.path, { body: call.body, headers: authorization === undefined ? {} : { authorization } });

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const hs = (secret: string, header: object, claims: object) => {
  const unsigned = `${b64(header)}.${b64(claims)}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
};

/** Every way a bearer credential can be bad; the role asked for is operator, so a leak would be obvious. */
function badCredentials(): Record<string, string | undefined> {
  const secret = h.config.JWT_SECRET;
  const claims = { sub: String(OPERATOR_ID), role: 'operator', exp: Math.floor(Date.now() / 1000) + 600 };
  const good = h.token(OPERATOR_ID, 'operator');
  const [header, , sig] = good.split('.');
  return {
    'no token': undefined,
    'not a bearer scheme': `Basic ${Buffer.from('admin:admin').toString('base64')}`,
    'malformed token': 'Bearer not.a-jwt',
    'two-part token': `Bearer ${good.split('.').slice(0, 2).join('.')}`,
    'empty bearer': 'Bearer ',
    expired: `Bearer ${token(secret, { sub: String(OPERATOR_ID), role: 'operator' }, -60)}`,
    'tampered payload (customer → operator, old signature)': `Bearer ${header}.${b64({ ...claims, sub: '5' })}.${sig}`,
    'tampered signature': `Bearer ${good.slice(0, -3)}${good.endsWith('AAA') ? 'BBB' : 'AAA'}`,
    'alg none': `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`,
    'RS256 header signed with the HMAC secret': `Bearer ${hs(secret, { alg: 'RS256', typ: 'JWT' }, claims)}`,
    'HS512': `Bearer ${b64({ alg: 'HS512', typ: 'JWT' })}.${b64(claims)}.${createHmac('sha512', secret).update(`${b64({ alg: 'HS512', typ: 'JWT' })}.${b64(claims)}`).digest('base64url')}`,
    'another secret': `Bearer ${token('not-the-secret-at-all-not-the-secret', { sub: String(OPERATOR_ID), role: 'operator' })}`,
    'unknown role': `Bearer ${token(secret, { sub: '5', role: 'admin' })}`,
    'sub not a positive integer': `Bearer ${token(secret, { sub: '-5', role: 'operator' })}`,
    'not yet valid (nbf)': `Bearer ${token(secret, { sub: String(OPERATOR_ID), role: 'operator', nbf: Math.floor(Date.now() / 1000) + 3600 })}`,
  };
}

beforeAll(async () => {
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
  const doc = (await h.req('GET', '/openapi.json')).json;
  served = new Set(Object.entries<Record<string, unknown>>(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => routeKey(m, path))));
  fx.carId = await newCar(h);
  fx.bookingId = (await booking()).id;
  const stays = stayApi(h);
  fx.hotelId = (await stays.hotel()).id;
  fx.roomTypeId = (await stays.roomType(fx.hotelId)).id;
  await stays.setInventory(fx.roomTypeId, day(1), day(10), 3);
  const plan = await h.req('POST', `/room-types/${fx.roomTypeId}/rate-plans`, { token: stays.operator, body: { name: 'Base' } });
  expect(plan.status, plan.text).toBe(201);
  fx.ratePlanId = plan.json.id;
  const cal = await h.req('PUT', `/rate-plans/${fx.ratePlanId}/calendar`, { token: stays.operator, body: { from: day(1), to: day(10), reason: 'setup', price: 100 } });
  expect(cal.status, cal.text).toBe(200);
  const quote = await h.req('POST', '/quotes', { token: h.token(OWNER, 'customer'), body: { roomTypeId: fx.roomTypeId, ratePlanId: fx.ratePlanId, checkIn: day(2), checkOut: addDays(day(2), 1) } });
  expect(quote.status, quote.text).toBe(200);
  fx.quoteId = quote.json.quoteId;
});
afterAll(async () => h?.close());

/** Skips (counted, with the reason) a row another branch brings while the served document does not list it. */
function skipUnlessServed(key: string, skip: (condition: boolean, note?: string) => void): void {
  const pending = ACCESS[key]!.pending;
  if (pending) skip(!served.has(key), `not in /openapi.json yet: ${pending}`);
}

describe('access matrix: every route × every caller, as the contract says', () => {
  it('has a row and a request for every operation of the served document, and every row but the pending ones is served', () => {
    expect([...served].filter((k) => !ACCESS[k])).toEqual([]);
    expect(Object.keys(ACCESS).filter((k) => !REQUESTS[k])).toEqual([]);
    expect(Object.keys(REQUESTS).filter((k) => !ACCESS[k])).toEqual([]);
    expect(Object.keys(ACCESS).filter((k) => !ACCESS[k]!.pending && !served.has(k))).toEqual([]);
  });

  for (const [key, row] of Object.entries(ACCESS)) {
    const summary = CALLERS.map((c) => `${c} ${row.verdicts[c] === 'allowed' ? row.ok : row.verdicts[c]}`).join(', ');
    it(`${key}: ${summary}`, async (ctx) => {
      skipUnlessServed(key, ctx.skip);
      const wrong: string[] = [];
      for (const caller of CALLERS) {
        const call = await REQUESTS[key]!(caller);
        const before = await call.watch?.();
        const r = await send(call, bearer(caller));
        const verdict = row.verdicts[caller];
        const code = verdict === 401 ? (row.unauthenticated ?? 'UNAUTHENTICATED') : verdict === 403 ? 'FORBIDDEN' : 'NOT_FOUND';
        const want = verdict === 'allowed' ? String(row.ok) : `${verdict} ${code}`;
        const got = r.status < 400 ? String(r.status) : `${r.status} ${r.json?.error?.code}`;
        if (got !== want) wrong.push(`${caller}: ${got} (${r.text.slice(0, 160)}), the contract says ${want}`);
        else if (verdict !== 'allowed' && call.watch) {
          const after = await call.watch();
          if (JSON.stringify(after) !== JSON.stringify(before)) wrong.push(`${caller}: refused ${r.status}, but the booking changed`);
        }
      }
      expect(wrong).toEqual([]);
    });
  }

  for (const [key, row] of Object.entries(ACCESS)) {
    if (row.verdicts.anonymous !== 401 || row.unauthenticated === 'INVALID_SIGNATURE') continue;
    it(`${key}: 401 UNAUTHENTICATED for every bad credential, and nothing changes`, async (ctx) => {
      skipUnlessServed(key, ctx.skip);
      const call = await REQUESTS[key]!('operator');
      const before = await call.watch?.();
      for (const [kind, auth] of Object.entries(badCredentials())) {
        const r = await send(call, auth);
        expect([r.status, r.json?.error?.code], `${kind}: ${r.text.slice(0, 200)}`).toEqual([401, 'UNAUTHENTICATED']);
      }
      expect(await call.watch?.()).toEqual(before);
    });
  }

  it('a path id that names nothing is 404 to every caller the route lets through, its request otherwise valid', async () => {
    for (const [key, row] of Object.entries(ACCESS)) {
      if (!served.has(key) || !key.includes('{') || key.includes('{asset}')) continue;
      const template = key.slice(key.indexOf(' ') + 1);
      for (const caller of CALLERS.filter((c) => row.verdicts[c] === 'allowed')) {
        const valid = await REQUESTS[key]!(caller);
        const query = valid.path.includes('?') ? valid.path.slice(valid.path.indexOf('?')) : '';
        const r = await send({ ...valid, path: template.replace(/\{\w+\}/g, MISSING) + query }, bearer(caller));
        expect([r.status, r.json?.error?.code], `${key} as ${caller}: ${r.text.slice(0, 200)}`).toEqual([404, 'NOT_FOUND']);
      }
    }
  });

  it('a host may not list a car for another host', async () => {
    const r = await h.req('POST', '/cars', {
      token: h.token(HOST_ID, 'host'), body: { plate: 'OTHER-1', model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 1, hostId: HOST_ID + 1 },
    });
    expect([r.status, r.json?.error?.code], r.text).toEqual([403, 'FORBIDDEN']);
  });
});
