import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOperations } from '../../api/app.js';
import type { Operation } from '../../api/openapi/operation.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, token, type Reply } from '../helpers/http.js';
import { HOST_ID, newCar } from '../helpers/cars.js';
import { OPERATOR_ID } from '../helpers/bookings.js';
import { addDays, stayApi } from '../helpers/stays.js';

// The auth matrix (issue 8): every route of the OpenAPI document × every kind of credential. Protected routes
// answer 401 UNAUTHENTICATED to a missing, malformed, expired, tampered, unsigned (alg none) or wrongly
// signed (RS256 header) token, 403 FORBIDDEN to a role that may not call them (before the input is read), and
// let the roles they name through (to 400/404 here: the requests name nothing that exists). Another tenant's
// resource is 404. Public routes ignore tokens; the webhook knows only its signature.

const ROLES = ['customer', 'host', 'operator'] as const;
type Role = (typeof ROLES)[number];
const OWNER = 700;
const STRANGER = 701;
const MISSING = '999999999';

let h: Harness;
let carId: number;
let bookingId: number;
let quoteId: number;
const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);

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

/** A request to `op` that names nothing that exists (path ids) or carries an empty body: past auth, it is 400 or 404. */
function probe(op: Operation): { path: string; body?: unknown } {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'asset' ? 'init.js' : MISSING));
  const query: Record<string, string> = {
    searchCars: `?city=HN&from=${encodeURIComponent(inHours(48))}&to=${encodeURIComponent(inHours(50))}`,
    searchStays: `?city=HCM&checkIn=${day(5)}&checkOut=${day(6)}`,
  };
  return { path: path + (query[op.operationId] ?? ''), body: op.method === 'get' ? undefined : {} };
}

const send = (op: Operation, authorization: string | undefined): Promise<Reply> => {
  const { path, body } = probe(op);
  return h.req(op.method.toUpperCase(), path, { body, headers: authorization === undefined ? {} : { authorization } });
};

const ops = allOperations();
const isProtected = (op: Operation): op is Operation & { auth: readonly Role[] } => op.auth !== 'public';

beforeAll(async () => {
  h = await startHarness();
  carId = await newCar(h);
  const hold = await h.req('POST', '/bookings', { token: h.token(OWNER, 'customer'), body: { carId, from: inHours(24 * 12), to: inHours(24 * 12 + 3) } });
  expect(hold.status, hold.text).toBe(201);
  bookingId = hold.json.bookingId;
  const stays = stayApi(h);
  const hotel = await stays.hotel();
  const rt = await stays.roomType(hotel.id);
  await stays.setInventory(rt.id, day(1), day(10), 3);
  const plan = await h.req('POST', `/room-types/${rt.id}/rate-plans`, { token: stays.operator, body: { name: 'Base' } });
  await h.req('PUT', `/rate-plans/${plan.json.id}/calendar`, { token: stays.operator, body: { from: day(1), to: day(10), reason: 'setup', price: 100 } });
  const quote = await h.req('POST', '/quotes', { token: h.token(OWNER, 'customer'), body: { roomTypeId: rt.id, ratePlanId: plan.json.id, checkIn: day(2), checkOut: addDays(day(2), 1) } });
  expect(quote.status, quote.text).toBe(200);
  quoteId = quote.json.quoteId;
});
afterAll(async () => h?.close());

describe('auth matrix: every route × every credential', () => {
  it('covers every operation of the document', () => {
    expect(ops.length).toBeGreaterThan(20);
    expect(ops.filter(isProtected).length).toBeGreaterThan(12);
  });

  for (const op of ops) {
    const name = `${op.method.toUpperCase()} ${op.path}`;
    if (op.operationId === 'paymentWebhook') {
      it(`${name}: a bearer token is no signature (401 INVALID_SIGNATURE)`, async () => {
        const r = await h.req('POST', '/payments/webhook', { body: { id: 'evt_1' }, token: h.token(OPERATOR_ID, 'operator') });
        expect([r.status, r.json.error.code]).toEqual([401, 'INVALID_SIGNATURE']);
      });
      continue;
    }
    if (!isProtected(op)) {
      it(`${name}: public, whatever credential comes with it`, async () => {
        for (const [kind, auth] of Object.entries({ ...badCredentials(), customer: `Bearer ${h.token(1, 'customer')}` })) {
          const r = await send(op, auth);
          expect(r.status, `${kind}: ${r.text.slice(0, 200)}`).toBeLessThan(400);
        }
      });
      continue;
    }
    it(`${name}: 401 UNAUTHENTICATED for every bad credential`, async () => {
      for (const [kind, auth] of Object.entries(badCredentials())) {
        const r = await send(op, auth);
        expect([r.status, r.json?.error?.code], `${kind}: ${r.text.slice(0, 200)}`).toEqual([401, 'UNAUTHENTICATED']);
      }
    });
    it(`${name}: roles ${op.auth.join(', ')} pass (400/404 here), the others get 403 FORBIDDEN`, async () => {
      for (const role of ROLES) {
        const sub = role === 'host' ? HOST_ID : role === 'operator' ? OPERATOR_ID : STRANGER;
        const r = await send(op, `Bearer ${h.token(sub, role)}`);
        if (op.auth.includes(role)) expect([400, 404], `${role}: ${r.status} ${r.text.slice(0, 200)}`).toContain(r.status);
        else expect([r.status, r.json?.error?.code], role).toEqual([403, 'FORBIDDEN']);
      }
    });
  }
});

describe("another tenant's resource is 404 (never leak existence)", () => {
  const asCustomer = (sub: number) => h.token(sub, 'customer');
  const cases: [string, () => Promise<Reply>][] = [
    ["another customer reads the booking", () => h.req('GET', `/bookings/${bookingId}`, { token: asCustomer(STRANGER) })],
    ["another customer pays the booking", () => h.req('GET', `/bookings/${bookingId}/pay`, { token: asCustomer(STRANGER) })],
    ["another customer cancels the booking", () => h.req('POST', `/bookings/${bookingId}/cancel`, { token: asCustomer(STRANGER), body: {} })],
    ["another customer changes the booking", () => h.req('POST', `/bookings/${bookingId}/change`, { token: asCustomer(STRANGER), body: { to: inHours(24 * 12 + 4) } })],
    ["another host changes a booking of someone else's car", () => h.req('POST', `/bookings/${bookingId}/change`, { token: h.token(HOST_ID + 1, 'host'), body: { to: inHours(24 * 12 + 4) } })],
    ["another host reads a booking of someone else's car", () => h.req('GET', `/bookings/${bookingId}`, { token: h.token(HOST_ID + 1, 'host') })],
    ["another host cancels a booking of someone else's car", () => h.req('POST', `/bookings/${bookingId}/cancel`, { token: h.token(HOST_ID + 1, 'host'), body: {} })],
    ["another host picks up someone else's car", () => h.req('POST', `/bookings/${bookingId}/pickup`, { token: h.token(HOST_ID + 1, 'host') })],
    ["another host returns someone else's car", () => h.req('POST', `/bookings/${bookingId}/return`, { token: h.token(HOST_ID + 1, 'host') })],
    ["another customer reads the quote", () => h.req('GET', `/quotes/${quoteId}`, { token: asCustomer(STRANGER) })],
  ];
  for (const [name, call] of cases) {
    it(name, async () => {
      const r = await call();
      expect([r.status, r.json?.error?.code], r.text).toEqual([404, 'NOT_FOUND']);
    });
  }

  it('the owner, the car\'s host and an operator do see the booking; a host may not list a car for another host', async () => {
    for (const t of [asCustomer(OWNER), h.token(HOST_ID, 'host'), h.token(OPERATOR_ID, 'operator')]) {
      expect((await h.req('GET', `/bookings/${bookingId}`, { token: t })).status).toBe(200);
    }
    expect((await h.req('GET', `/quotes/${quoteId}`, { token: asCustomer(OWNER) })).status).toBe(200);
    const r = await h.req('POST', '/cars', {
      token: h.token(HOST_ID, 'host'), body: { plate: 'OTHER-1', model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 1, hostId: HOST_ID + 1 },
    });
    expect(r.status, r.text).toBe(403);
  });
});
