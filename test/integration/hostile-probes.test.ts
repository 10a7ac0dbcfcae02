import { createHmac } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { hostToken, newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { inHours, tally, waitFor } from '../helpers/http.js';
import { operatorToken } from '../helpers/bookings.js';
import { addDays } from '../helpers/stays.js';
import { rateApi } from '../helpers/rates.js';
import { paymentSucceeded } from '../helpers/webhooks.js';
import { send, closeAgent } from '../fuzz/raw-http.js';
import { Redis } from 'ioredis';
import { HoldRateLimiter } from '../../api/hold-rate-limiter.js';

// Issue 16 (hostile input, round three): each case failed before its fix. The limiter, a provider's currency in
// lower case, the webhook's signature over raw bytes, empty headers, and money beyond exact integers.

let h: Harness;
let rates: ReturnType<typeof rateApi>;
const today = () => new Date().toISOString().slice(0, 10);

/** Row counts of the tables a refused request could touch. */
const counts = async () => (await h.sql(`SELECT (SELECT count(*) FROM booking)::int AS b, (SELECT count(*) FROM outbox)::int AS o,
  (SELECT count(*) FROM car)::int AS c, (SELECT count(*) FROM room_type)::int AS r, (SELECT count(*) FROM payment)::int AS p,
  (SELECT count(*) FROM refund)::int AS f, (SELECT count(*) FROM idempotency_key)::int AS k, (SELECT count(*) FROM quote)::int AS q`)).rows[0];

async function expect400(send: () => Promise<{ status: number; json?: any; text: string }>, field: string) {
  const before = await counts();
  const r = await send();
  expect(r.status, r.text).toBe(400);
  const json = r.json ?? JSON.parse(r.text);
  expect(json.error.code).toBe('VALIDATION');
  expect(json.error.details.field).toBe(field);
  expect(await counts()).toEqual(before);
}

/** Signs the exact bytes `raw` as the provider does: HMAC-SHA256 over `${t}.` and then the bytes. */
function signBytes(raw: Buffer, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', h.config.PAYMENT_WEBHOOK_SECRET).update(`${t}.`).update(raw).digest('hex')}`;
}
const postWebhook = (raw: Buffer, signature = signBytes(raw)) =>
  send(h.baseUrl, { method: 'POST', path: '/payments/webhook', headers: { 'content-type': 'application/json', 'psp-signature': signature }, body: raw });

/** A car hold of a fresh customer: its id, deposit and token. */
async function hold(carId: number, fromHours: number) {
  const c = newCustomer(h);
  const r = await h.req('POST', '/bookings', { token: c.token, body: { carId, from: inHours(fromHours), to: inHours(fromHours + 2) } });
  expect(r.status, r.text).toBe(201);
  return { id: r.json.bookingId as number, deposit: r.json.depositAmount as number, token: c.token };
}
const statusOf = async (b: { id: number; token: string }) => (await h.req('GET', `/bookings/${b.id}`, { token: b.token })).json;

beforeAll(async () => {
  h = await startHarness();
  rates = rateApi(h);
});
afterAll(async () => {
  closeAgent();
  await h?.close();
});

describe('1. the hold limiter counts only holds that are created, also under concurrency', () => {
  it('4 doomed holds in flight (blocked on the car) and 3 good ones at once leave 3 holds, no 429', async () => {
    const taken = await newCar(h);
    const free = [await newCar(h), await newCar(h), await newCar(h)];
    const period = { from: inHours(48), to: inHours(50) };
    // The taken period is inserted in an open transaction: the doomed inserts wait on it in the exclusion
    // constraint, so they are in flight (past the limiter) when the good ones arrive, and get 409 once it commits.
    const blocker = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
        SELECT 'car', 'HOLD', 1, c.id, tstzrange($2::timestamptz, $3::timestamptz, '[)'), c.deposit_amount, c.daily_price, c.currency, now() + interval '15 minutes', now() + interval '15 minutes'
        FROM car c WHERE c.id = $1`, [taken, period.from, period.to]);
      const c = newCustomer(h);
      const doomed = [0, 1, 2, 3].map(() => h.req('POST', '/bookings', { token: c.token, body: { carId: taken, ...period } }));
      // All four past the limiter (each holds a pending slot) before the good ones come (on a loaded machine a fixed
      // 300 ms was not always enough, and a doomed one judged after the good ones were created is rightly 429).
      const redis = new Redis(h.config.REDIS_URL, { keyPrefix: h.config.REDIS_KEY_PREFIX });
      try {
        await waitFor(async () => (await redis.zcard(`hold-rate:{${c.id}}:pending`)) >= 4, 10_000, 20);
      } finally {
        redis.disconnect();
      }
      const good = free.map((carId) => h.req('POST', '/bookings', { token: c.token, body: { carId, ...period } }));
      await new Promise((r) => setTimeout(r, 200));
      await blocker.query('COMMIT');
      const answers = await Promise.all([...doomed, ...good]);
      expect(tally(answers.slice(0, 4))).toEqual({ '409 CAR_UNAVAILABLE': 4 });
      expect(tally(answers.slice(4))).toEqual({ 201: 3 });
      expect((await h.sql('SELECT count(*)::int AS n FROM booking WHERE customer_id = $1', [c.id])).rows[0].n).toBe(3);
      // And the limit still holds: the next is 429.
      const fourth = await h.req('POST', '/bookings', { token: c.token, body: { carId: free[0], from: inHours(60), to: inHours(61) } });
      expect(fourth.status, fourth.text).toBe(429);
    } finally {
      await blocker.end();
    }
  });

  it('the wait is bounded: past it a request goes ahead of undecided holds, counted; created holds then refuse the next', async () => {
    const redis = new Redis('redis://127.0.0.1:6379/5', { keyPrefix: `${h.config.REDIS_KEY_PREFIX}probe:`, lazyConnect: true });
    let failOpen = 0;
    try {
      const limiter = new HoldRateLimiter(redis as never, 3, 900, () => failOpen++, { waitMs: 100, pollMs: 10 });
      const slots = [await limiter.acquire(7), await limiter.acquire(7), await limiter.acquire(7)];
      const started = Date.now();
      const fourth = await limiter.acquire(7); // 3 undecided: waits, then goes ahead
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      expect(failOpen).toBe(1);
      await slots[0]!.release(); // a refusal: never counted
      await Promise.all([slots[1]!.confirm(), slots[2]!.confirm(), fourth.confirm()]);
      await expect(limiter.acquire(7)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    } finally {
      redis.disconnect();
    }
  });

  it('5 good holds at once: exactly 3 are created, 2 get 429', async () => {
    const c = newCustomer(h);
    const cars = await Promise.all([0, 1, 2, 3, 4].map(() => newCar(h)));
    const answers = await Promise.all(cars.map((carId) => h.req('POST', '/bookings', { token: c.token, body: { carId, from: inHours(70), to: inHours(71) } })));
    expect(tally(answers)).toEqual({ 201: 3, '429 RATE_LIMITED': 2 });
  });
});

describe('2. currency codes compare without regard to case', () => {
  it('a signed payment_intent.succeeded in "vnd" for a VND hold of the right amount confirms it, refunds nothing', async () => {
    const b = await hold(await newCar(h), 80);
    const event = paymentSucceeded(b.id, b.deposit, { currency: 'vnd' });
    const r = await h.req('POST', '/payments/webhook', {
      raw: JSON.stringify(event), headers: { 'content-type': 'application/json', 'psp-signature': signBytes(Buffer.from(JSON.stringify(event))) },
    });
    expect(r.status, r.text).toBe(200);
    const after = await statusOf(b);
    expect(after.status).toBe('CONFIRMED');
    expect(after.refund).toBeNull();
    expect((await h.sql('SELECT currency FROM payment WHERE booking_id = $1', [b.id])).rows).toEqual([{ currency: 'VND' }]);
  });

  it('a car or a room type created with "vnd" is VND', async () => {
    const car = await h.req('POST', '/cars', { token: hostToken(h), body: { plate: `LC-${Date.now()}`, model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 1, currency: 'vnd' } });
    expect(car.status, car.text).toBe(201);
    expect(car.json.currency).toBe('VND');
    const hotel = await rates.hotel();
    const rt = await rates.roomTypeWith(hotel.id, { currency: 'Vnd' });
    expect(rt.currency).toBe('VND');
  });
});

describe('3. the webhook signature covers the raw bytes', () => {
  it('a body that starts with a UTF-8 BOM, signed over its exact bytes, is applied (was 401)', async () => {
    const b = await hold(await newCar(h), 90);
    const raw = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(paymentSucceeded(b.id, b.deposit)))]);
    const r = await postWebhook(raw);
    expect(r.status, r.text).toBe(200);
    expect((await statusOf(b)).status).toBe('CONFIRMED');
  });

  it('CRLF and trailing whitespace, signed over the exact bytes, are applied', async () => {
    const b = await hold(await newCar(h), 100);
    const raw = Buffer.from(`${JSON.stringify(paymentSucceeded(b.id, b.deposit), null, 2).replace(/\n/g, '\r\n')}\r\n \t\r\n`);
    const r = await postWebhook(raw);
    expect(r.status, r.text).toBe(200);
    expect((await statusOf(b)).status).toBe('CONFIRMED');
  });

  it('a byte that is not UTF-8, validly signed, is 400 VALIDATION (a malformed body), not 401; a wrong signature stays 401', async () => {
    const b = await hold(await newCar(h), 110);
    const text = JSON.stringify(paymentSucceeded(b.id, b.deposit, { id: 'evt_XX' }));
    const raw = Buffer.from(text.replace('evt_XX', 'evt_\u00ff'), 'latin1'); // 0xff: never valid in UTF-8
    const before = await counts();
    const r = await postWebhook(raw);
    expect(r.status, r.text).toBe(400);
    expect(JSON.parse(r.text).error).toMatchObject({ code: 'VALIDATION', details: { field: 'body' } });
    expect(await counts()).toEqual(before);
    expect((await postWebhook(raw, signBytes(Buffer.from(raw.toString('utf8'))))).status).toBe(401);
    expect((await statusOf(b)).status).toBe('HOLD');
  });
});

describe('4. a header given empty is malformed', () => {
  const emptyKey = async (value: string) => {
    const carId = await newCar(h);
    const c = newCustomer(h);
    const body = JSON.stringify({ carId, from: inHours(120), to: inHours(122) });
    await expect400(() => send(h.baseUrl, {
      method: 'POST', path: '/bookings', body,
      headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json', 'idempotency-key': value },
    }), 'Idempotency-Key');
  };
  it('Idempotency-Key: "" on POST /bookings is 400 VALIDATION and holds nothing (was 201)', () => emptyKey(''));
  it('Idempotency-Key of whitespace only is 400 too', () => emptyKey(' \t '));

  it('Idempotency-Key: "" on POST /bookings/{id}/change is 400', async () => {
    const b = await hold(await newCar(h), 130);
    await expect400(() => send(h.baseUrl, {
      method: 'POST', path: `/bookings/${b.id}/change`, body: JSON.stringify({ from: inHours(131), to: inHours(133) }),
      headers: { authorization: `Bearer ${b.token}`, 'content-type': 'application/json', 'idempotency-key': '' },
    }), 'Idempotency-Key');
  });
});

describe('5. money is at most 10^15, and so is every derived total', () => {
  const car = (o: Record<string, unknown>) => h.req('POST', '/cars', {
    token: hostToken(h), body: { plate: `M-${Math.random().toString(36).slice(2, 10)}`, model: 'M', city: 'HN', dailyPrice: 1, depositAmount: 1, ...o },
  });

  it('a dailyPrice or deposit beyond 10^15 is 400 (9007199254740991 was accepted, and its total rounded)', async () => {
    await expect400(() => car({ dailyPrice: 9_007_199_254_740_991 }), 'dailyPrice');
    await expect400(() => car({ dailyPrice: 1e15 + 1 }), 'dailyPrice');
    await expect400(() => car({ depositAmount: 1e15 + 1 }), 'depositAmount');
    const hotel = await rates.hotel();
    await expect400(() => h.req('POST', `/hotels/${hotel.id}/room-types`, { token: operatorToken(h), body: { name: 'Big', depositAmount: 1e15 + 1 } }), 'depositAmount');
  });

  it('price × days beyond 10^15 is 400 on the hold, and at the bound the total is exact', async () => {
    const big = await car({ dailyPrice: 1e15 });
    expect(big.status, big.text).toBe(201);
    const c = newCustomer(h);
    await expect400(() => h.req('POST', '/bookings', { token: c.token, body: { carId: big.json.id, from: inHours(200), to: inHours(225) } }), 'to');
    const one = await h.req('POST', '/bookings', { token: c.token, body: { carId: big.json.id, from: inHours(200), to: inHours(210) } });
    expect(one.status, one.text).toBe(201);
    expect(one.json.totalAmount).toBe(1e15);
    const third = await car({ dailyPrice: 333_333_333_333_333 });
    const three = await h.req('POST', '/bookings', { token: c.token, body: { carId: third.json.id, from: inHours(300), to: inHours(372) } });
    expect(three.status, three.text).toBe(201);
    expect(three.json.totalAmount).toBe(999_999_999_999_999);
  });

  it('a change whose price × days would pass 10^15 is 400', async () => {
    const big = await car({ dailyPrice: 1e15 });
    const c = newCustomer(h);
    const b = await h.req('POST', '/bookings', { token: c.token, body: { carId: big.json.id, from: inHours(400), to: inHours(401) } });
    expect(b.status, b.text).toBe(201);
    await expect400(() => h.req('POST', `/bookings/${b.json.bookingId}/change`, { token: c.token, body: { from: inHours(400), to: inHours(430) } }), 'to');
  });

  it('deposit × rooms beyond 10^15 is 400 on the hold and the quote (it was stored wrong and could never be paid)', async () => {
    const hotel = await rates.hotel();
    const rt = await rates.roomTypeWith(hotel.id, { depositAmount: 1e15, maxGuests: 4 });
    await rates.setInventory(rt.id, today(), addDays(today(), 10), 10);
    const c = newCustomer(h);
    const stay = { roomTypeId: rt.id, checkIn: addDays(today(), 1), checkOut: addDays(today(), 2) };
    await expect400(() => h.req('POST', '/bookings', { token: c.token, body: { ...stay, rooms: 9 } }), 'rooms');
    const plan = await rates.ratePlan(rt.id);
    await rates.setCalendar(plan.id, { from: stay.checkIn, to: stay.checkOut, price: 1 });
    await expect400(() => h.req('POST', '/quotes', { token: c.token, body: { ...stay, rooms: 9, ratePlanId: plan.id } }), 'rooms');
    const one = await h.req('POST', '/bookings', { token: c.token, body: stay });
    expect(one.status, one.text).toBe(201);
    expect(one.json.depositAmount).toBe(1e15);
  });

  it('a stay total (Σ nightly price × rooms) beyond 10^15 is 400 on the hold and the quote', async () => {
    const hotel = await rates.hotel();
    const rt = await rates.roomTypeWith(hotel.id, { depositAmount: 1, maxGuests: 4 });
    await rates.setInventory(rt.id, today(), addDays(today(), 15), 100);
    const plan = await rates.ratePlan(rt.id);
    await rates.setCalendar(plan.id, { from: today(), to: addDays(today(), 15), price: 1e12 });
    const c = newCustomer(h);
    const stay = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: addDays(today(), 1), checkOut: addDays(today(), 12), rooms: 100 };
    await expect400(() => h.req('POST', '/quotes', { token: c.token, body: stay }), 'rooms');
    await expect400(() => h.req('POST', '/bookings', { token: c.token, body: stay }), 'rooms');
  });

  it('a validly signed event with an amount beyond 10^15 is 400 VALIDATION', async () => {
    const raw = Buffer.from(JSON.stringify(paymentSucceeded(999_999, 1e15 + 1)));
    const r = await postWebhook(raw);
    expect(r.status, r.text).toBe(400);
    expect(JSON.parse(r.text).error.details.field).toBe('data.amount');
  });

  it('the database refuses amounts beyond 10^15 whoever writes them (migration 018)', async () => {
    await expect(h.sql(`INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      VALUES (1, 'DB-BIG-1', 'M', 'HN', 1000000000000001, 1, 'VND', 0)`)).rejects.toThrow(/car_daily_price_bound/);
    await expect(h.sql(`INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      VALUES (1, 'DB-BIG-2', 'M', 'HN', 1, 1000000000000001, 'VND', 0)`)).rejects.toThrow(/car_deposit_bound/);
    await expect(h.sql(`UPDATE booking SET total_amount = 1000000000000001 WHERE id = (SELECT min(id) FROM booking)`)).rejects.toThrow(/booking_total_bound/);
    await expect(h.sql(`UPDATE booking SET deposit_amount = 1000000000000001 WHERE id = (SELECT min(id) FROM booking)`)).rejects.toThrow(/booking_deposit_bound/);
  });
});
