import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { fixedClock } from '../helpers/clock.js';
import { addDays } from '../helpers/stays.js';
import { codeOf, pricedDay, pricedHarness, type PricedHarness, type rateApi } from '../helpers/rates.js';
import { purgeQuotes } from '../../shared/db/quotes.js';

// Contract, "Prices, restrictions and quotes" (quotes and restrictions) and the stay body / 201 / booking fields of
// POST /bookings. The server's clock is pinned (moved by the tests); dates are in the hotel's time zone.
const clock = fixedClock('2027-03-20T09:00:00Z');
let h: Harness;
let api: ReturnType<typeof rateApi>;
let pricedRoomType: PricedHarness['pricedRoomType'];
let heldNights: PricedHarness['heldNights'];
beforeAll(async () => ({ h, api, pricedRoomType, heldNights } = await pricedHarness(clock)));
afterAll(async () => h?.close());

const d = pricedDay;
const bookingCount = (roomTypeId: number) => api.bookingCount(roomTypeId);

describe('POST /quotes', () => {
  it('answers the nightly breakdown, Σ price × rooms, deposit × rooms, the currency and validUntil = now + QUOTE_TTL_S; reserves nothing', async () => {
    clock.set('2027-03-20T09:00:00Z');
    const { rt, plan } = await pricedRoomType();
    const customer = api.nextCustomer();
    const r = await api.quote(customer, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(3), rooms: 2, guests: 5 });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({
      quoteId: expect.any(Number), roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(3), rooms: 2, guests: 5,
      nights: [{ date: d(0), price: 1_000_000 }, { date: d(1), price: 1_200_000 }, { date: d(2), price: 1_100_000 }],
      totalAmount: 2 * (1_000_000 + 1_200_000 + 1_100_000), depositAmount: 1_000_000, currency: 'VND',
      validUntil: new Date(Date.parse('2027-03-20T09:00:00Z') + h.config.QUOTE_TTL_S * 1000).toISOString(),
    });
    expect(h.config.QUOTE_TTL_S).toBe(900);
    // Nothing reserved, nothing booked.
    expect(await heldNights(rt.id)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(await bookingCount(rt.id)).toBe(0);
    // Defaults: 1 room, 1 guest.
    const one = await api.quote(customer, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(3), checkOut: d(4) });
    expect(one.json).toMatchObject({ rooms: 1, guests: 1, totalAmount: 900_000, depositAmount: 500_000 });

    // Visible only to its customer.
    const mine = await h.req('GET', `/quotes/${r.json.quoteId}`, { token: h.token(customer, 'customer') });
    expect(mine.status).toBe(200);
    expect(mine.json).toEqual(r.json);
    expect(codeOf(await h.req('GET', `/quotes/${r.json.quoteId}`, { token: h.token(api.nextCustomer(), 'customer') }))).toBe('404 NOT_FOUND');
    expect(codeOf(await h.req('GET', `/quotes/999999999`, { token: h.token(customer, 'customer') }))).toBe('404 NOT_FOUND');
    expect(codeOf(await h.req('GET', `/quotes/${r.json.quoteId}`, { token: api.operator }))).toBe('403 FORBIDDEN');
  });

  it('400 VALIDATION: another room type\'s rate plan (ratePlanId), guests above maxGuests × rooms (guests), dates and malformed input', async () => {
    const { rt, plan } = await pricedRoomType({ maxGuests: 3 });
    const other = await pricedRoomType();
    const c = api.nextCustomer();
    const base = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(2) };
    const field = async (body: Record<string, unknown>) => {
      const r = await api.quote(c, body);
      return `${codeOf(r)} ${r.json?.error?.details?.field ?? ''}`.trim();
    };
    expect(await field({ ...base, ratePlanId: other.plan.id })).toBe('400 VALIDATION ratePlanId');
    expect(await field({ ...base, guests: 4 })).toBe('400 VALIDATION guests');
    expect(await field({ ...base, rooms: 2, guests: 7 })).toBe('400 VALIDATION guests');
    expect((await api.quote(c, { ...base, rooms: 2, guests: 6 })).status).toBe(200);
    expect(await field({ ...base, ratePlanId: 999_999 })).toBe('404 NOT_FOUND');
    expect(await field({ ...base, roomTypeId: 999_999 })).toBe('404 NOT_FOUND');
    expect(await field({ ...base, checkOut: d(0) })).toBe('400 VALIDATION checkOut');
    expect(await field({ ...base, checkOut: addDays(d(0), 31) })).toBe('400 VALIDATION checkOut');
    for (const bad of [
      { ratePlanId: undefined }, { ratePlanId: 0 }, { ratePlanId: -3 }, { ratePlanId: 1.5 }, { ratePlanId: '1' }, { ratePlanId: 1e300 },
      { roomTypeId: null }, { rooms: 0 }, { rooms: 101 }, { rooms: 1e20 }, { guests: 0 }, { guests: 10_001 }, { guests: 'two' },
      { checkIn: '2027-02-29' }, { checkIn: '2027-4-10' }, { checkIn: 20270410 }, { checkOut: '' }, { checkIn: '9999-99-99' },
    ]) {
      expect(codeOf(await api.quote(c, { ...base, ...bad })), JSON.stringify(bad)).toBe('400 VALIDATION');
    }
    for (const raw of ['[]', '"x"', '{"roomTypeId":', '1e999']) {
      const r = await h.req('POST', '/quotes', { token: h.token(c, 'customer'), raw, headers: { 'content-type': 'application/json' } });
      expect(codeOf(r), raw).toBe('400 VALIDATION');
    }
    for (const role of ['operator', 'host'] as const) {
      expect(codeOf(await h.req('POST', '/quotes', { token: h.token(1, role), body: base }))).toBe('403 FORBIDDEN');
    }
  });

  it('409 SOLD_OUT when the stay cannot be held now; restrictions come first', async () => {
    const { rt, plan } = await pricedRoomType();
    await api.setInventory(rt.id, d(1), d(2), 0);
    const c = api.nextCustomer();
    const r = await api.quote(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(3) });
    expect(codeOf(r)).toBe('409 SOLD_OUT');
    expect(codeOf(await api.quote(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(3), checkOut: d(6) }))).toBe('409 STAY_RESTRICTED');
    expect(codeOf(await api.quote(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(2), checkOut: d(4), rooms: 6, guests: 1 }))).toBe('409 SOLD_OUT');
    // Nights beyond the inventory are sold out as well (d(6) has no inventory row).
    await api.setCalendar(plan.id, { from: d(4), to: d(8), price: 1 });
    expect(codeOf(await api.quote(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(5), checkOut: d(7) }))).toBe('409 SOLD_OUT');
  });
});

describe('restrictions (quotes and holds with ratePlanId): 409 STAY_RESTRICTED, first failing reason in the contract\'s order', () => {
  it('each reason, its date, and the order between them; a refused hold holds nothing', async () => {
    const cases: { name: string; calendar: Record<string, unknown>[]; stay: [number, number]; reason: string; date: string }[] = [
      { name: 'no price on a night', calendar: [], stay: [3, 5], reason: 'no_price', date: d(4) },
      { name: 'stop sell', calendar: [{ from: d(1), to: d(2), stopSell: true }], stay: [0, 3], reason: 'stop_sell', date: d(1) },
      { name: 'closed to arrival on checkIn', calendar: [{ from: d(1), to: d(2), closedToArrival: true }], stay: [1, 3], reason: 'closed_to_arrival', date: d(1) },
      { name: 'closed to arrival inside the stay is no restriction', calendar: [{ from: d(1), to: d(2), closedToArrival: true }], stay: [0, 3], reason: 'none', date: '' },
      { name: 'closed to departure on the checkOut date', calendar: [{ from: d(3), to: d(4), closedToDeparture: true }], stay: [1, 3], reason: 'closed_to_departure', date: d(3) },
      { name: 'closed to departure inside the stay is no restriction', calendar: [{ from: d(1), to: d(2), closedToDeparture: true }], stay: [0, 3], reason: 'none', date: '' },
      { name: 'min stay of the arrival night', calendar: [{ from: d(0), to: d(1), minStay: 3 }], stay: [0, 2], reason: 'min_stay', date: d(0) },
      { name: 'min stay of a later night does not bind', calendar: [{ from: d(1), to: d(2), minStay: 3 }], stay: [0, 2], reason: 'none', date: '' },
      { name: 'max stay of the arrival night', calendar: [{ from: d(0), to: d(1), maxStay: 2 }], stay: [0, 3], reason: 'max_stay', date: d(0) },
      { name: 'no_price before stop_sell', calendar: [{ from: d(0), to: d(1), stopSell: true }], stay: [0, 5], reason: 'no_price', date: d(4) },
      { name: 'stop_sell before closed_to_arrival', calendar: [{ from: d(0), to: d(1), closedToArrival: true }, { from: d(2), to: d(3), stopSell: true }], stay: [0, 3], reason: 'stop_sell', date: d(2) },
      { name: 'closed_to_arrival before closed_to_departure', calendar: [{ from: d(0), to: d(1), closedToArrival: true }, { from: d(2), to: d(3), closedToDeparture: true }], stay: [0, 2], reason: 'closed_to_arrival', date: d(0) },
      { name: 'closed_to_departure before min_stay', calendar: [{ from: d(0), to: d(1), minStay: 4 }, { from: d(2), to: d(3), closedToDeparture: true }], stay: [0, 2], reason: 'closed_to_departure', date: d(2) },
      { name: 'min_stay before max_stay', calendar: [{ from: d(0), to: d(1), minStay: 3, maxStay: 3 }, { from: d(0), to: d(1), maxStay: 1 }], stay: [0, 2], reason: 'min_stay', date: d(0) },
      { name: 'restricted before sold out', calendar: [{ from: d(0), to: d(1), stopSell: true }], stay: [0, 2], reason: 'stop_sell', date: d(0) },
    ];
    for (const tc of cases) {
      const { rt, plan } = await pricedRoomType();
      if (tc.name === 'restricted before sold out') await api.setInventory(rt.id, d(0), d(2), 0);
      for (const body of tc.calendar) await api.setCalendar(plan.id, body);
      const stay = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(tc.stay[0]), checkOut: d(tc.stay[1]) };
      const q = await api.quote(api.nextCustomer(), stay);
      const hold = await api.holdStay(api.nextCustomer(), stay);
      if (tc.reason === 'none') {
        expect(q.status, `${tc.name}: ${q.text}`).toBe(200);
        expect(hold.status, `${tc.name}: ${hold.text}`).toBe(201);
        continue;
      }
      for (const r of [q, hold]) {
        expect(codeOf(r), tc.name).toBe('409 STAY_RESTRICTED');
        expect(r.json.error.details, tc.name).toEqual({ reason: tc.reason, date: tc.date });
      }
      expect(await bookingCount(rt.id), tc.name).toBe(0);
      expect(await heldNights(rt.id), tc.name).toEqual([0, 0, 0, 0, 0, 0]);
    }
  });
});

describe('checkIn not before today in the hotel\'s time zone (server clock, DST-proof dates)', () => {
  it('the same instant is a different "today" in Berlin, Ho Chi Minh City and New York', async () => {
    // 2027-03-27T23:30Z: Berlin 00:30 CET on the 28th (the spring-forward night), HCM 06:30 on the 28th, New York 19:30 EDT on the 27th.
    clock.set('2027-03-27T23:30:00Z');
    const day = '2027-03-27';
    const results: Record<string, string[]> = {};
    for (const tz of ['Europe/Berlin', 'Asia/Ho_Chi_Minh', 'America/New_York']) {
      const hotel = await api.hotel({ timezone: tz });
      const rt = await api.roomTypeWith(hotel.id);
      await api.setInventory(rt.id, '2027-03-26', '2027-04-02', 3);
      const plan = await api.ratePlan(rt.id);
      await api.setCalendar(plan.id, { from: '2027-03-26', to: '2027-04-02', price: 100 });
      const stay = (checkIn: string) => ({ roomTypeId: rt.id, ratePlanId: plan.id, checkIn, checkOut: addDays(checkIn, 2) });
      results[tz] = [];
      for (const checkIn of [addDays(day, -1), day, addDays(day, 1)]) {
        const q = await api.quote(api.nextCustomer(), stay(checkIn));
        const hold = await api.holdStay(api.nextCustomer(), stay(checkIn));
        expect(codeOf(hold), `${tz} ${checkIn}`).toBe(codeOf(q) === '200' ? '201' : codeOf(q));
        if (q.status === 400) expect(q.json.error.details.field).toBe('checkIn');
        results[tz]!.push(codeOf(q));
      }
    }
    expect(results).toEqual({
      'Europe/Berlin': ['400 VALIDATION', '400 VALIDATION', '200'],
      'Asia/Ho_Chi_Minh': ['400 VALIDATION', '400 VALIDATION', '200'],
      'America/New_York': ['400 VALIDATION', '200', '200'],
    });
    clock.set('2027-03-20T09:00:00Z');
  });

  it('a stay across a DST change has exactly its calendar nights (spring-forward and fall-back in Berlin)', async () => {
    clock.set('2027-03-01T12:00:00Z');
    const hotel = await api.hotel({ timezone: 'Europe/Berlin' });
    const rt = await api.roomTypeWith(hotel.id);
    const plan = await api.ratePlan(rt.id);
    for (const [from, to] of [['2027-03-26', '2027-03-30'], ['2027-10-29', '2027-11-02']] as const) {
      await api.setInventory(rt.id, from, to, 2);
      for (let i = 0; i < 4; i++) await api.setCalendar(plan.id, { from: addDays(from, i), to: addDays(from, i + 1), price: 100 + i });
      const q = await api.quote(api.nextCustomer(), { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: addDays(from, 1), checkOut: addDays(from, 3) });
      expect(q.status, q.text).toBe(200);
      expect(q.json.nights).toEqual([{ date: addDays(from, 1), price: 101 }, { date: addDays(from, 2), price: 102 }]);
      expect(q.json.totalAmount).toBe(203);
    }
    clock.set('2027-03-20T09:00:00Z');
  });
});

describe('quote retention', () => {
  it('purgeQuotes deletes quotes 24 h past validUntil; younger ones stay', async () => {
    clock.set('2027-03-20T09:00:00Z');
    const { rt, plan } = await pricedRoomType();
    const c = api.nextCustomer();
    const body = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(1) };
    const old = (await api.quote(c, body)).json.quoteId;
    const recent = (await api.quote(c, body)).json.quoteId;
    await h.sql(`UPDATE quote SET valid_until = now() - interval '25 hours' WHERE id = $1`, [old]);
    await h.sql(`UPDATE quote SET valid_until = now() - interval '23 hours' WHERE id = $1`, [recent]);
    expect(await purgeQuotes(h.deps.db, 24)).toBeGreaterThanOrEqual(1);
    const get = (id: number) => h.req('GET', `/quotes/${id}`, { token: h.token(c, 'customer') });
    expect(codeOf(await get(old))).toBe('404 NOT_FOUND');
    expect(codeOf(await get(recent))).toBe('200');
  });
});
