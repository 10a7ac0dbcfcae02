import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fixedClock } from '../helpers/clock.js';
import { newCar, hostToken } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { operatorToken } from '../helpers/bookings.js';
import { stayApi, addDays } from '../helpers/stays.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

// Issue 8, items 7, 8 and 10: each case here is one the endpoint fuzz (test/fuzz) found or the issue named, and
// failed before its fix. Every refusal is 400 VALIDATION (never a 5xx) and writes nothing.

const clock = fixedClock(new Date());
let h: Harness;
let carId: number;
let stays: ReturnType<typeof stayApi>;
let roomTypeId: number;
const today = () => clock.now().toISOString().slice(0, 10);

/** Row counts of the tables a refused request could touch. */
async function counts() {
  return (await h.sql(`SELECT (SELECT count(*) FROM booking)::int AS b, (SELECT count(*) FROM outbox)::int AS o, (SELECT count(*) FROM car)::int AS c,
    (SELECT count(*) FROM hotel)::int AS h, (SELECT count(*) FROM rate_plan)::int AS r, (SELECT count(*) FROM webhook_inbox)::int AS w,
    (SELECT count(*) FROM inventory_ledger)::int AS l`)).rows[0];
}

async function expect400(send: () => Promise<{ status: number; json: any; text: string }>, field?: string) {
  const before = await counts();
  const r = await send();
  expect(r.status, r.text).toBe(400);
  expect(r.json.error.code).toBe('VALIDATION');
  if (field) expect(r.json.error.details.field).toBe(field);
  expect(await counts()).toEqual(before);
}

beforeAll(async () => {
  h = await startHarness({ clock });
  carId = await newCar(h);
  stays = stayApi(h);
  const hotel = await stays.hotel({ timezone: 'Asia/Ho_Chi_Minh' });
  roomTypeId = (await stays.roomType(hotel.id, 500_000)).id;
  await stays.setInventory(roomTypeId, addDays(today(), -3), addDays(today(), 10), 5);
});
afterAll(async () => h?.close());

describe('Idempotency-Key replay comes before the clock check (item 8)', () => {
  it('a car hold replayed after its `from` has passed answers the stored 201, not 400', async () => {
    const c = newCustomer(h);
    const at = clock.now().getTime();
    const body = { carId, from: new Date(at + 2 * 3_600_000).toISOString(), to: new Date(at + 5 * 3_600_000).toISOString() };
    const first = await h.req('POST', '/bookings', { token: c.token, body, headers: { 'idempotency-key': 'late-retry-car' } });
    expect(first.status, first.text).toBe(201);
    clock.advance(3 * 3_600_000); // `from` is now in the past
    try {
      const replay = await h.req('POST', '/bookings', { token: c.token, body, headers: { 'idempotency-key': 'late-retry-car' } });
      expect(replay.status, replay.text).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.json).toEqual(first.json);
      // Without the key the same body is refused: the clock check still runs for new requests.
      const fresh = await h.req('POST', '/bookings', { token: c.token, body });
      expect(fresh.status).toBe(400);
    } finally {
      clock.set(new Date(at));
    }
  });

  it('a stay hold replayed after its checkIn has passed answers the stored 201', async () => {
    const c = newCustomer(h);
    const at = clock.now().getTime();
    const body = { roomTypeId, checkIn: addDays(today(), 1), checkOut: addDays(today(), 2) };
    const first = await h.req('POST', '/bookings', { token: c.token, body, headers: { 'idempotency-key': 'late-retry-stay' } });
    expect(first.status, first.text).toBe(201);
    clock.advance(3 * 86_400_000);
    try {
      const replay = await h.req('POST', '/bookings', { token: c.token, body, headers: { 'idempotency-key': 'late-retry-stay' } });
      expect(replay.status, replay.text).toBe(201);
      expect(replay.json).toEqual(first.json);
    } finally {
      clock.set(new Date(at));
    }
  });
});

describe('hostile input is 400, never 500, and writes nothing (item 7)', () => {
  it('an instant with the offset +99:99 (hold and search)', async () => {
    const c = newCustomer(h);
    await expect400(() => h.req('POST', '/bookings', { token: c.token, body: { carId, from: '2031-01-01T10:00:00+99:99', to: '2031-01-01T12:00:00+07:00' } }), 'from');
    await expect400(() => h.req('GET', `/cars?city=HN&from=${encodeURIComponent('2031-01-01T10:00:00+99:99')}&to=${encodeURIComponent('2031-01-02T10:00:00Z')}`), 'from');
  });

  it('an instant in year 0000 or with the hour 24', async () => {
    const c = newCustomer(h);
    await expect400(() => h.req('GET', `/cars?city=HN&from=${encodeURIComponent('0000-01-01T10:00:00Z')}&to=${encodeURIComponent('0000-01-02T10:00:00Z')}`), 'from');
    await expect400(() => h.req('POST', '/bookings', { token: c.token, body: { carId, from: '2031-01-01T24:00:00Z', to: '2031-01-02T10:00:00Z' } }), 'from');
  });

  it('a NUL character in a name, a city, a search or a cancel reason (PostgreSQL refuses it: was 500)', async () => {
    const op = operatorToken(h);
    await expect400(() => h.req('POST', '/cars', { token: hostToken(h), body: { plate: 'NUL-1', model: 'a\u0000b', city: 'HN', dailyPrice: 1, depositAmount: 1 } }), 'model');
    await expect400(() => h.req('POST', '/hotels', { token: op, body: { name: 'Hotel\u0000', city: 'HCM', timezone: 'Asia/Ho_Chi_Minh' } }), 'name');
    await expect400(() => h.req('POST', `/room-types/${roomTypeId}/rate-plans`, { token: op, body: { name: '\u0000' } }), 'name');
    await expect400(() => h.req('GET', `/hotels/availability?city=${encodeURIComponent('H\u0000CM')}&checkIn=${addDays(today(), 1)}&checkOut=${addDays(today(), 2)}`), 'city');
    await expect400(() => h.req('GET', `/cars?city=%00&from=${encodeURIComponent(new Date(Date.now() + 86_400_000).toISOString())}&to=${encodeURIComponent(new Date(Date.now() + 2 * 86_400_000).toISOString())}`), 'city');
    const c = newCustomer(h);
    const hold = await h.req('POST', '/bookings', { token: c.token, body: { roomTypeId, checkIn: addDays(today(), 2), checkOut: addDays(today(), 3) } });
    expect(hold.status, hold.text).toBe(201);
    await expect400(() => h.req('POST', `/bookings/${hold.json.bookingId}/cancel`, { token: c.token, body: { reason: 'no\u0000' } }), 'reason');
  });

  it('a lone surrogate or a control character in a name', async () => {
    await expect400(() => h.req('POST', '/hotels', { token: operatorToken(h), raw: '{"name":"\\ud800","city":"HCM","timezone":"UTC"}', headers: { 'content-type': 'application/json' } }), 'name');
    await expect400(() => h.req('POST', '/hotels', { token: operatorToken(h), body: { name: 'a\u001bb', city: 'HCM', timezone: 'UTC' } }), 'name');
  });

  it('a body nested 10,000 deep on a hold with an Idempotency-Key (its request hash overflowed the stack: 500)', async () => {
    const c = newCustomer(h);
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const raw = `{"carId":${carId},"from":"2031-05-01T10:00:00Z","to":"2031-05-01T12:00:00Z","pad":${deep}}`;
    await expect400(() => h.req('POST', '/bookings', { token: c.token, raw, headers: { 'content-type': 'application/json', 'idempotency-key': 'deep-1' } }), 'body');
    expect((await h.sql(`SELECT count(*)::int AS n FROM idempotency_key WHERE key = 'deep-1'`)).rows[0].n).toBe(0);
    // 32 levels are fine; strings that look like brackets are not nesting.
    const ok = `{"carId":${carId},"from":"2031-05-02T10:00:00Z","to":"2031-05-02T12:00:00Z","pad":${'['.repeat(31)}"[[[[{{{{\\\"["${']'.repeat(31)}}`;
    const r = await h.req('POST', '/bookings', { token: c.token, raw: ok, headers: { 'content-type': 'application/json', 'idempotency-key': 'deep-2' } });
    expect(r.status, r.text).toBe(201);
  });

  it('a validly signed webhook whose event id holds a NUL', async () => {
    const event = paymentSucceeded(999_999, 1, { id: 'evt_\u0000' });
    await expect400(() => signedWebhook(h, event, { t: Math.floor(clock.now().getTime() / 1000) }), 'id');
  });
});

describe('smaller refusals and acknowledgements (item 10)', () => {
  it('a validly signed event whose reference is over 64 characters is acknowledged (200, unknown reference)', async () => {
    const event = paymentSucceeded('9'.repeat(65), 1000);
    const r = await signedWebhook(h, event, { t: Math.floor(clock.now().getTime() / 1000) });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ received: true });
  });

  it('a deposit of 0 is refused for cars and room types (it could never be paid)', async () => {
    await expect400(() => h.req('POST', '/cars', { token: hostToken(h), body: { plate: 'ZERO-1', model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 0 } }), 'depositAmount');
    const hotel = await stays.hotel();
    await expect400(() => h.req('POST', `/hotels/${hotel.id}/room-types`, { token: operatorToken(h), body: { name: 'Free', depositAmount: 0 } }), 'depositAmount');
    await expect400(() => h.req('POST', '/cars', { token: hostToken(h), raw: '{"plate":"ZERO-2","model":"M","city":"HN","dailyPrice":1,"depositAmount":-0}', headers: { 'content-type': 'application/json' } }), 'depositAmount');
    // The database refuses it too (migration 014), whoever writes the row.
    await expect(h.sql(`INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      VALUES (1, 'ZERO-3', 'M', 'HN', 1, 0, 'VND', 0)`)).rejects.toThrow(/car_deposit_positive/);
    await expect(h.sql(`INSERT INTO room_type (hotel_id, name, deposit_amount, currency, max_guests) VALUES ($1, 'Free', 0, 'VND', 2)`, [hotel.id]))
      .rejects.toThrow(/room_type_deposit_positive/);
  });

  it('a stay (no rate plan) cannot be held for a checkIn before today in the hotel\'s zone', async () => {
    const c = newCustomer(h);
    await expect400(() => h.req('POST', '/bookings', { token: c.token, body: { roomTypeId, checkIn: addDays(today(), -2), checkOut: addDays(today(), 1) } }), 'checkIn');
  });
});
