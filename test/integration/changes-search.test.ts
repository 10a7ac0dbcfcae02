import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, waitFor } from '../helpers/http.js';
import { addDays, stayApi } from '../helpers/stays.js';
import { newCustomer } from '../helpers/customers.js';
import { changed } from '../helpers/changes.js';
import { carSearchAnswer } from '../../api/schemas/cars.js';
import { availabilityAnswer } from '../../api/schemas/hotels.js';
import { searchAvailableCars } from '../../shared/db/cars.js';
import { searchAvailability } from '../../shared/db/hotels.js';
import { nightsBetween } from '../../shared/domain/nights.js';

// The search indexes (fed from the outbox and the inventory ledger) see a changed booking's new calendar as they see a
// new hold: a car change frees part of a period and takes another, maybe on another car (booking.changed replaces
// the booking's interval); a stay change moves room-night counts (the ledger). Their answers stay what SQL answers.

let h: Harness;
let seq = 0;
const city = `CHG-${randomUUID().slice(0, 6)}`;
beforeAll(async () => {
  h = await startHarness({ env: { SEARCH_CACHE_TTL_S: '10', SEARCH_INDEX: 'on', HOLD_RATE_LIMIT: '1000' } });
});
afterAll(async () => h?.close());

async function newCar(dailyPrice: number): Promise<number> {
  const r = await h.req('POST', '/cars', {
    token: h.token(900, 'host'), body: { plate: `CH-${Date.now()}-${seq++}`, model: 'M', city, dailyPrice, depositAmount: 1000, turnaroundMinutes: 60 },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.id;
}
const cars = async (fromH: number, toH: number): Promise<number[]> => {
  const r = await h.req('GET', `/cars?city=${city}&from=${inHours(fromH)}&to=${inHours(toH)}`);
  expect(r.status, r.text).toBe(200);
  return carSearchAnswer.parse(r.json).cars.map((c) => c.id).sort((a, b) => a - b);
};
const sameAs = async (expected: number[], fromH: number, toH: number) =>
  waitFor(async () => JSON.stringify(await cars(fromH, toH)) === JSON.stringify([...expected].sort((a, b) => a - b)), 3_000);

describe('car search after changes', () => {
  it('follows an extension, a move to another car and a shortening; answers what SQL answers', async () => {
    const [a, b] = [await newCar(100), await newCar(200)];
    await waitFor(async () => h.searchIndex!.cars() !== null && (await cars(30, 34)).length === 2);
    const c = newCustomer(h);
    const held = await h.req('POST', '/bookings', { token: c.token, body: { carId: a, from: inHours(30), to: inHours(34) } });
    expect(held.status).toBe(201);
    await sameAs([b], 30, 34);
    await changed(h, held.json.bookingId, c.token, { to: inHours(50) }); // extended
    await sameAs([b], 45, 48);
    await changed(h, held.json.bookingId, c.token, { carId: b, from: inHours(40) }); // moved to b, [40, 50)
    await sameAs([a, b], 30, 34);
    await sameAs([a], 45, 48);
    await changed(h, held.json.bookingId, c.token, { to: inHours(42) }); // shortened: b free again from 43 h (turnaround)
    await sameAs([a, b], 43, 48);
    await sameAs([a], 41, 42);
    for (const [f, t] of [[30, 34], [39, 41], [41, 43], [42, 44], [43, 60]] as const) {
      const sql = (await searchAvailableCars(h.deps.db, { city, from: new Date(inHours(f)), to: new Date(inHours(t)), limit: 50 })).map((x) => x.id).sort((x, y) => x - y);
      expect(await cars(f, t), `${f}–${t}`).toEqual(sql);
    }
  });
});

describe('stay availability after changes', () => {
  it('follows a stay shifted, grown and moved to another room type; answers what SQL answers', async () => {
    const stays = stayApi(h);
    const where = `${city}-stay`;
    const hotel = await stays.hotel({ city: where });
    const [x, y] = [await stays.roomType(hotel.id), await stays.roomType(hotel.id)];
    const d = (n: number) => addDays(new Date().toISOString().slice(0, 10), n);
    await stays.setInventory(x.id, d(10), d(20), 3);
    await stays.setInventory(y.id, d(10), d(20), 3);
    const avail = async (ci: string, co: string) => {
      const r = await h.req('GET', `/hotels/availability?city=${encodeURIComponent(where)}&checkIn=${ci}&checkOut=${co}`);
      expect(r.status, r.text).toBe(200);
      return availabilityAnswer.parse(r.json).roomTypes;
    };
    const freeOf = async (rt: number, ci: string, co: string) => (await avail(ci, co)).find((r) => r.roomTypeId === rt)?.available ?? 0;
    const c = newCustomer(h);
    const held = await h.req('POST', '/bookings', { token: c.token, body: { roomTypeId: x.id, checkIn: d(10), checkOut: d(12) } });
    expect(held.status, held.text).toBe(201);
    await waitFor(async () => (await freeOf(x.id, d(10), d(11))) === 2, 3_000);
    await changed(h, held.json.bookingId, c.token, { checkIn: d(11), checkOut: d(13), rooms: 2 });
    await waitFor(async () => (await freeOf(x.id, d(10), d(11))) === 3 && (await freeOf(x.id, d(12), d(13))) === 1, 3_000);
    await changed(h, held.json.bookingId, c.token, { roomTypeId: y.id });
    await waitFor(async () => (await freeOf(x.id, d(10), d(14))) === 3 && (await freeOf(y.id, d(11), d(13))) === 1, 3_000);
    for (const [ci, co] of [[d(10), d(12)], [d(11), d(13)], [d(12), d(15)]] as const) {
      const sql = await searchAvailability(h.deps.db, { city: where, checkIn: ci, checkOut: co, rooms: 1, nights: nightsBetween(ci, co) });
      expect(await avail(ci, co), `${ci}–${co}`).toEqual(sql);
    }
  });
});
