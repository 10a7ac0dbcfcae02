import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, waitFor } from '../helpers/http.js';
import { addDays } from '../helpers/stays.js';
import { rateApi } from '../helpers/rates.js';
import { newCustomerId } from '../helpers/customers.js';
import { carSearchAnswer } from '../../api/schemas/cars.js';
import { availabilityAnswer } from '../../api/schemas/hotels.js';
import { searchAvailableCars } from '../../shared/db/cars.js';
import { searchAvailability } from '../../shared/db/hotels.js';
import { nightsBetween } from '../../shared/domain/nights.js';
import { SearchIndexes } from '../../shared/search/indexes.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.js';
import { createMetrics } from '../../api/metrics.js';
import { redisClient } from '../../shared/redis.js';

// Searches answered from the API's in-memory indexes (SEARCH_CACHE_TTL_S ≥ 2): they follow holds, cancellations and
// inventory changes within a poll or two, answer exactly what the SQL answers, and miss no event even when a
// transaction commits its event after later ones (the tail's gap rule).

let h: Harness;
let seq = 0;
const city = `IDX-${randomUUID().slice(0, 6)}`;
const host = () => h.token(900, 'host');

beforeAll(async () => {
  h = await startHarness({ env: { SEARCH_CACHE_TTL_S: '10', SEARCH_INDEX: 'on', HOLD_RATE_LIMIT: '1000' } });
});
afterAll(async () => h?.close());

async function newCar(dailyPrice: number, where = city): Promise<number> {
  const r = await h.req('POST', '/cars', {
    token: host(), body: { plate: `IX-${Date.now()}-${seq++}`, model: 'M', city: where, dailyPrice, depositAmount: 1000, turnaroundMinutes: 60 },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.id;
}

/** GET /cars, the answer checked against its (strict) schema: the index answers no field more or less. */
const searchCars = async (from: string, to: string, where = city, limit = 50) => {
  const r = await h.req('GET', `/cars?city=${encodeURIComponent(where)}&from=${from}&to=${to}&limit=${limit}`);
  expect(r.status, r.text).toBe(200);
  return carSearchAnswer.parse(r.json).cars;
};
const search = async (from: string, to: string, where = city, limit = 50): Promise<number[]> =>
  (await searchCars(from, to, where, limit)).map((c) => c.id);

/**
 * How many searches the in-memory index answered while `run` ran: each search asks it for its calendar, and
 * one too old to answer from (null) sends the search to SQL, so comparing with SQL would compare SQL with itself.
 */
async function answeredByIndex(kind: 'cars' | 'stays', run: () => Promise<void>): Promise<number> {
  const index = h.searchIndex!;
  const ask = index[kind] as (...args: number[]) => unknown;
  let answered = 0;
  Object.assign(index, { [kind]: (...args: number[]) => {
    const calendar = ask.apply(index, args);
    if (calendar) answered++;
    return calendar;
  } });
  try {
    await run();
  } finally {
    delete (index as unknown as Record<string, unknown>)[kind]; // the prototype's method again
  }
  return answered;
}

async function sqlUpdate(text: string, values: unknown[]): Promise<void> {
  const c = new pg.Client({ connectionString: h.config.DATABASE_URL });
  await c.connect();
  await c.query(text, values).finally(() => c.end());
}

const hold = (carId: number, from: string, to: string) =>
  h.req('POST', '/bookings', { token: h.token(50_000 + seq++, 'customer'), body: { carId, from, to } });

describe('car search from the in-memory index', () => {
  it('drops a car once held and lists it again once the hold is cancelled', async () => {
    // Every instant from one minute: the boundary checks below are exact, and a minute may turn while the test runs.
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const inHours = (hours: number) => new Date(minute + hours * 3_600_000).toISOString();
    const cars = [await newCar(300), await newCar(100), await newCar(200)];
    const [from, to] = [inHours(30), inHours(34)];
    await waitFor(async () => (await search(from, to)).length === 3 && h.searchIndex!.cars() !== null);
    expect(await search(from, to)).toEqual([cars[1], cars[2], cars[0]]);
    const b = await hold(cars[1]!, inHours(33), inHours(36));
    expect(b.status, b.text).toBe(201);
    await waitFor(async () => !(await search(from, to)).includes(cars[1]!), 3_000);
    // [from, to + 60 min) reaches the hold only when to + turnaround passes its start.
    expect(await search(inHours(20), inHours(32))).toContain(cars[1]);
    expect(await search(inHours(20), inHours(32) .replace(/:00\.000Z$/, ':01.000Z'))).not.toContain(cars[1]);
    const c = await h.req('POST', `/bookings/${b.json.bookingId}/cancel`, { token: host(), body: {} });
    expect(c.status, c.text).toBe(200);
    await waitFor(async () => (await search(from, to)).includes(cars[1]!), 3_000);
  });

  it('lists a car its host just created at once, without waiting for a poll (the write waits for the index)', async () => {
    const where = `${city}-new`;
    await waitFor(async () => h.searchIndex!.cars() !== null);
    for (let i = 0; i < 3; i++) {
      const carId = await newCar(100 + i, where);
      expect(await search(inHours(50), inHours(52), where)).toContain(carId);
    }
  });

  it('answers exactly what the SQL search answers', async () => {
    const where = `${city}-cmp`;
    const cars = await Promise.all([5, 1, 3, 3, 2, 4, 1].map((p) => newCar(p * 100, where)));
    for (let i = 0; i < 30; i++) {
      const start = 24 + ((i * 7) % 100);
      await hold(cars[i % cars.length]!, inHours(start), inHours(start + 1 + (i % 9)));
    }
    await h.searchIndex!.catchUp(10_000); // a poll that started after the last hold has read it
    const served = await answeredByIndex('cars', async () => {
      for (let i = 0; i < 25; i++) {
        const start = 20 + ((i * 5) % 110);
        const [from, to] = [inHours(start), inHours(start + 1 + ((i * 3) % 30))];
        const limit = 1 + (i % 8);
        const sql = (await searchAvailableCars(h.deps.db, { city: where, from: new Date(from), to: new Date(to), limit }))
          .map(({ hostId: _h, turnaroundMinutes: _t, ...car }) => car);
        expect(await searchCars(from, to, where, limit), `${from}–${to} limit ${limit}`).toEqual(sql);
      }
    });
    expect(served, 'searches answered by the index, not by its SQL fallback').toBe(25);
  });

  it('follows the catalogue car by car: a price or city changed in the table moves the car, a car committed after a later one is not skipped', async () => {
    const where = `${city}-cat`;
    const [a, b, c] = [await newCar(100, where), await newCar(200, where), await newCar(300, where)];
    const [from, to] = [inHours(60), inHours(62)];
    await waitFor(async () => (await search(from, to, where)).length === 3 && h.searchIndex!.cars() !== null);
    const sql = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await sql.connect();
    try {
      // An operator's UPDATE (no API route changes a car): within a poll, not at the next rebuild.
      await sql.query('UPDATE car SET daily_price = 250 WHERE id = $1', [a]);
      await waitFor(async () => JSON.stringify(await search(from, to, where)) === JSON.stringify([b, a, c]), 3_000);
      await sql.query('UPDATE car SET city = $2 WHERE id = $1', [c, `${where}-moved`]);
      await waitFor(async () => (await search(from, to, `${where}-moved`)).includes(c), 3_000);
      expect(await search(from, to, where)).toEqual([b, a]);
      // A transaction draws a catalogue version, then stays open while a later update commits a larger one.
      await sql.query('BEGIN');
      await sql.query('UPDATE car SET daily_price = 5 WHERE id = $1', [b]);
      const other = new pg.Client({ connectionString: h.config.DATABASE_URL });
      await other.connect();
      await other.query('UPDATE car SET daily_price = 10 WHERE id = $1', [a]).finally(() => other.end());
      await waitFor(async () => (await search(from, to, where))[0] === a, 3_000);
      expect(await search(from, to, where)).toEqual([a, b]);
      await sql.query('COMMIT');
      await waitFor(async () => JSON.stringify(await search(from, to, where)) === JSON.stringify([b, a]), 3_000);
    } finally {
      await sql.end();
    }
  });

  it('a rebuild in place (here on every poll) while holds come and go keeps answering what the SQL answers', async () => {
    const where = `${city}-rebuild`;
    const cars = await Promise.all([3, 1, 2, 5, 4].map((p) => newCar(p * 100, where)));
    const idx = new SearchIndexes(h.deps.prepared, { pollMs: 50, maxAgeMs: 5_000, catalogueEveryMs: 5_000, rebuildEveryMs: 0 });
    idx.start();
    try {
      await waitFor(async () => idx.cars() !== null);
      const taken: number[] = [];
      for (let i = 0; i < 20; i++) {
        const start = 24 + ((i * 11) % 60);
        const r = await hold(cars[i % cars.length]!, inHours(start), inHours(start + 2 + (i % 5)));
        if (r.status === 201) taken.push(r.json.bookingId);
        if (i % 3 === 2 && taken.length) {
          const c = await h.req('POST', `/bookings/${taken.shift()}/cancel`, { token: host(), body: {} });
          expect(c.status, c.text).toBe(200);
        }
        await sqlUpdate('UPDATE car SET daily_price = daily_price + 1 WHERE id = $1', [cars[(i * 3) % cars.length]!]);
      }
      for (let k = 0; k < 3; k++) await idx.catchUp(10_000); // a whole rebuild and tail after the last change
      for (let i = 0; i < 15; i++) {
        const start = 20 + ((i * 7) % 70);
        const [from, to] = [new Date(inHours(start)), new Date(inHours(start + 1 + (i % 6)))];
        const sql = (await searchAvailableCars(h.deps.db, { city: where, from, to, limit: 50 })).map((c) => c.id);
        expect(idx.cars()!.search(where, from.getTime(), to.getTime(), 50).map((c) => c.id), `${from.toISOString()}–${to.toISOString()}`).toEqual(sql);
      }
    } finally {
      await idx.stop();
    }
  });

  it('/ready answers 503 (search indexes loading) until both indexes are built, then 200', async () => {
    // The stay index's first load cannot read the room types while this lock is held.
    const lock = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE room_type IN ACCESS EXCLUSIVE MODE');
    const idx = new SearchIndexes(h.deps.prepared, { pollMs: 50, maxAgeMs: 5_000, catalogueEveryMs: 5_000, rebuildEveryMs: 60_000 });
    const redis = redisClient(h.config, 'request');
    const server = createServer(createApp({ ...h.deps, redis, metrics: createMetrics(), searchIndex: idx }).callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const ready = async () => {
      const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/ready`);
      return { status: r.status, body: await r.json() };
    };
    try {
      idx.start();
      await waitFor(async () => idx.cars() !== null, 10_000); // the car index is built; the stay index waits
      expect(await ready()).toEqual({ status: 503, body: { error: { code: 'UNAVAILABLE', message: 'search indexes still loading', details: { searchIndex: 'loading' } } } });
      // A first load that cannot end does not keep the process out of rotation for good (SEARCH_LOAD_MAX_MS).
      expect([idx.builtOrGaveUp(60_000), idx.builtOrGaveUp(0)]).toEqual([false, true]);
      await lock.query('ROLLBACK');
      await waitFor(async () => (await ready()).status === 200, 10_000);
      expect(idx.built()).toBe(true);
    } finally {
      await lock.end().catch(() => {});
      await idx.stop();
      await new Promise((r) => server.close(r));
      redis.disconnect();
    }
  });

  it('misses no event committed after later ones (a smaller outbox id made visible last)', async () => {
    const where = `${city}-gap`;
    const [early, late] = [await newCar(100, where), await newCar(200, where)];
    const [from, to] = [inHours(40), inHours(42)];
    await waitFor(async () => (await search(from, to, where)).length === 2);
    // A transaction takes an outbox id, then stays open while a later hold commits with a larger id.
    const slow = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      const id = randomUUID();
      await slow.query(`INSERT INTO outbox (event_id, topic, message_key, payload) VALUES ($1, 'booking.held', '999999', $2)`, [id, {
        eventId: id, type: 'booking.held', occurredAt: new Date().toISOString(), bookingId: 999_999, customerId: 1, kind: 'car', carId: early,
        from, to, holdExpiresAt: inHours(1), depositAmount: 1000, currency: 'VND',
      }]);
      expect((await hold(late, from, to)).status).toBe(201);
      await waitFor(async () => !(await search(from, to, where)).includes(late), 3_000);
      expect(await search(from, to, where)).toEqual([early]);
      await slow.query('COMMIT');
      await waitFor(async () => (await search(from, to, where)).length === 0, 3_000);
    } finally {
      await slow.end();
    }
  });
});

describe('stay availability from the in-memory index', () => {
  it('follows holds (plain and on a rate plan, with guests and a quote) and inventory changes, and answers what the SQL answers', async () => {
    const api = rateApi(h);
    const where = `${city}-stay`;
    const hotel = await api.hotel({ city: where });
    const [a, b] = [await api.roomType(hotel.id), await api.roomType(hotel.id)];
    const checkIn = addDays(new Date().toISOString().slice(0, 10), 10);
    const checkOut = addDays(checkIn, 3);
    await api.setInventory(a.id, checkIn, addDays(checkIn, 10), 5);
    await api.setInventory(b.id, checkIn, addDays(checkIn, 10), 4);
    /** GET /hotels/availability, checked against its (strict) schema. */
    const answer = async (rooms: number, ci: string, co: string) => {
      const r = await h.req('GET', `/hotels/availability?city=${encodeURIComponent(where)}&checkIn=${ci}&checkOut=${co}&rooms=${rooms}`);
      expect(r.status, r.text).toBe(200);
      return availabilityAnswer.parse(r.json).roomTypes;
    };
    const avail = async (rooms = 1, ci = checkIn, co = checkOut) => (await answer(rooms, ci, co)).map((x) => [x.roomTypeId, x.available]);
    await waitFor(async () => (await avail()).length === 2 && h.searchIndex!.stays(Math.floor(Date.now() / 86_400_000)) !== null, 5_000);
    expect(await avail()).toEqual([[a.id, 5], [b.id, 4]]);
    expect((await api.hold(newCustomerId(), a.id, addDays(checkIn, 1), addDays(checkIn, 2), 3)).status).toBe(201);
    await waitFor(async () => JSON.stringify(await avail()) === JSON.stringify([[b.id, 4], [a.id, 2]]), 3_000);
    // An operator's change is answered at once (the write waits for the index).
    await api.setInventory(b.id, addDays(checkIn, 2), addDays(checkIn, 3), 1);
    expect(await avail(2)).toEqual([[a.id, 2]]);

    // A room type sold on a rate plan (maxGuests 3): a quote takes nothing; holds on the plan, with guests, one of
    // them from the quote, take their rooms like any other hold. The search answers rooms, never prices or guests.
    const { rt: p, plan } = await api.pricedRoomType(hotel.id, checkIn, [1_000_000, 1_200_000, 1_100_000, 900_000]);
    await waitFor(async () => (await avail()).some(([id, n]) => id === p.id && n === 5), 3_000);
    const customer = newCustomerId();
    const stay = { roomTypeId: p.id, ratePlanId: plan.id, checkIn, checkOut, rooms: 2, guests: 3 };
    const q = await api.quote(customer, stay);
    expect(q.status, q.text).toBe(200);
    expect((await api.holdStay(customer, { ...stay, quoteId: q.json.quoteId })).status).toBe(201);
    expect((await api.holdStay(newCustomerId(), { ...stay, checkIn: addDays(checkIn, 1), rooms: 1, guests: 2 })).status).toBe(201);
    await waitFor(async () => (await avail()).some(([id, n]) => id === p.id && n === 2), 3_000);

    const cases = [
      [checkIn, checkOut, 1], [addDays(checkIn, 2), addDays(checkIn, 9), 1], [addDays(checkIn, 5), addDays(checkIn, 12), 1], [checkIn, checkOut, 3],
      [checkIn, addDays(checkIn, 1), 3], [addDays(checkIn, 1), addDays(checkIn, 5), 2],
    ] as const;
    const served = await answeredByIndex('stays', async () => {
      for (const [ci, co, rooms] of cases) {
        const sql = await searchAvailability(h.deps.db, { city: where, checkIn: ci, checkOut: co, rooms, nights: nightsBetween(ci, co) });
        expect(await answer(rooms, ci, co), `${ci}–${co} × ${rooms}`).toEqual(sql);
      }
    });
    expect(served, 'searches answered by the index, not by its SQL fallback').toBe(cases.length);
  });
});
