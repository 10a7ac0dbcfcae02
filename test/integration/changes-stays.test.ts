import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { mapLimit, tally } from '../helpers/http.js';
import { drained, getBooking, operatorToken } from '../helpers/bookings.js';
import { newCustomer } from '../helpers/customers.js';
import { addDays, expectNoDeadlocks, prng } from '../helpers/stays.js';
import { rateApi } from '../helpers/rates.js';
import type { Hold } from '../helpers/cars.js';
import { change, changed, changedEvents, confirm, footprint } from '../helpers/changes.js';
import { stayInventory } from '../../scripts/invariants/stay-inventory.js';

// CONTRACT "Changing a booking", stays: the room-night counters move by the difference only, in the hold's lock order,
// with restrictions and prices judged on the new stay under the locks; nights the old and the new stay share are never
// free; a refusal leaves the booking exactly as it was; an audit entry (reason `change`) for every night whose counts
// change; a lower deposit of a CONFIRMED stay refunds the difference.

let h: Harness;
let api: ReturnType<typeof rateApi>;
let hotelId: number;
const today = new Date().toISOString().slice(0, 10);
const day = (n: number) => addDays(today, n);

beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '100000' } });
  api = rateApi(h);
  hotelId = (await api.hotel({ city: 'HCM' })).id;
});
afterAll(async () => h?.close());

/** A room type of `hotel` (deposit 500 000 per room, maxGuests 3) with `sellable` rooms on day(from)…day(to). */
async function roomType(sellable: number, from: number, to: number, hotel = hotelId) {
  const rt = await api.roomTypeWith(hotel, { depositAmount: 500_000, maxGuests: 3 });
  await api.setInventory(rt.id, day(from), day(to), sellable);
  return rt.id;
}

async function holdStay(body: Record<string, unknown>): Promise<Hold> {
  const c = newCustomer(h);
  const r = await h.req('POST', '/bookings', { token: c.token, body });
  expect(r.status, r.text).toBe(201);
  return { id: r.json.bookingId, carId: 0, customerId: c.id, token: c.token, deposit: r.json.depositAmount, holdExpiresAt: new Date(r.json.holdExpiresAt) };
}

const counts = async (rt: number, from: number, to: number) =>
  (await api.nights(rt, day(from), day(to))).map((n) => `${n.held}/${n.confirmed}`);
const ledgerOf = async (bookingId: number) =>
  (await h.sql(`SELECT night::text, reason, after_held - before_held AS dh, after_confirmed - before_confirmed AS dc
                FROM inventory_ledger WHERE booking_id = $1 ORDER BY id`, [bookingId])).rows;

/** The stay-inventory invariant of check:invariants on this database: counts = live stays, the ledger chains. */
async function inventoryHolds() {
  const r = await stayInventory.check({ query: async (text, params) => (await h.sql(text, params)).rows, graceS: 600, psp: null, kafka: null, notifyLog: null, redis: null });
  expect(r.violations).toEqual([]);
  return r.checked;
}

describe('the last room', () => {
  it('shifted by one night while 20 concurrent holds want the shared night: the change goes through, all 20 get 409', async () => {
    const rt = await roomType(1, 10, 16);
    const b = await holdStay({ roomTypeId: rt, checkIn: day(10), checkOut: day(12) });
    let lastConcurrent = 0;
    // Back and forth: [10, 12) → [11, 13) → [10, 12) …; night 11 is shared by both and must never be free.
    for (let round = 0; round < 4; round++) {
      const [ci, co] = round % 2 === 0 ? [11, 13] : [10, 12];
      const holds = Array.from({ length: 20 }, () => h.req('POST', '/bookings', {
        token: newCustomer(h).token, body: { roomTypeId: rt, checkIn: day(11), checkOut: day(12) },
      }));
      const [moved, ...answers] = await Promise.all([change(h, b.id, b.token, { checkIn: day(ci), checkOut: day(co) }), ...holds]);
      lastConcurrent = Date.now();
      expect(moved.status, moved.text).toBe(200);
      expect(tally(answers)).toEqual({ '409 SOLD_OUT': 20 });
    }
    // The night given up is free at once.
    expect(await counts(rt, 10, 13)).toEqual(['1/0', '1/0', '0/0']);
    expect((await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { roomTypeId: rt, checkIn: day(12), checkOut: day(13) } })).status).toBe(201);
    // Audit: one `change` entry per night whose count moved (never the shared night 11).
    const entries = (await ledgerOf(b.id)).filter((e) => e.reason === 'change');
    expect(entries.map((e) => `${e.night}:${e.dh}`)).toEqual([
      `${day(10)}:-1`, `${day(12)}:1`, `${day(10)}:1`, `${day(12)}:-1`, `${day(10)}:-1`, `${day(12)}:1`, `${day(10)}:1`, `${day(12)}:-1`,
    ]);
    expect((await changedEvents(h, b.id)).length).toBe(4);
    await inventoryHolds();
    await expectNoDeadlocks(h, lastConcurrent);
  }, 60_000);

  it('adding a room that does not exist is 409 SOLD_OUT, and so are nights without inventory: the booking exactly as it was', async () => {
    const rt = await roomType(2, 20, 23);
    const b = await holdStay({ roomTypeId: rt, checkIn: day(20), checkOut: day(22) });
    await holdStay({ roomTypeId: rt, checkIn: day(21), checkOut: day(22) }); // the second room of night 21
    const before = await footprint(h, b.id);
    for (const body of [{ rooms: 2 }, { checkOut: day(24) }, { checkIn: day(19) }]) {
      const r = await change(h, b.id, b.token, body);
      expect([r.status, r.json.error.code], JSON.stringify(body)).toEqual([409, 'SOLD_OUT']);
    }
    expect(await footprint(h, b.id)).toEqual(before);
    expect(await counts(rt, 20, 23)).toEqual(['1/0', '2/0', '0/0']);
    expect((await changed(h, b.id, b.token, { checkIn: day(21), checkOut: day(23), rooms: 1 })).checkIn).toBe(day(21)); // night 21: its own room
  });
});

describe('rooms and deposits', () => {
  it('dropping a room of a CONFIRMED stay refunds the difference; the confirmed count moves by one room', async () => {
    const rt = await roomType(5, 30, 34);
    const b = await holdStay({ roomTypeId: rt, checkIn: day(30), checkOut: day(33), rooms: 3, guests: 5 });
    await confirm(h, b);
    expect(await counts(rt, 30, 33)).toEqual(['0/3', '0/3', '0/3']);
    let r = await change(h, b.id, b.token, { rooms: 1 });
    expect([r.status, r.json.error.details?.field]).toEqual([400, 'guests']); // 5 guests do not fit one room
    const body = await changed(h, b.id, b.token, { rooms: 2, guests: 4 });
    expect(body).toMatchObject({ status: 'CONFIRMED', rooms: 2, guests: 4, depositAmount: 1_000_000, refund: { amount: 500_000 }, change: { depositDelta: -500_000 } });
    expect(await counts(rt, 30, 33)).toEqual(['0/2', '0/2', '0/2']);
    expect((await ledgerOf(b.id)).filter((e) => e.reason === 'change').map((e) => e.dc)).toEqual([-1, -1, -1]);
    await drained(h);
    expect((await getBooking(h, b.id)).refund).toEqual({ amount: 500_000, status: 'SUCCEEDED' });
    // Adding the room back would raise the deposit of a CONFIRMED booking.
    r = await change(h, b.id, b.token, { rooms: 3 });
    expect([r.status, r.json.error.code]).toEqual([409, 'DEPOSIT_INCREASE']);
    await inventoryHolds();
  });

  it('another room type of the same hotel: the nights move across; another hotel or another currency is 400', async () => {
    const a = await roomType(3, 40, 44);
    const other = await api.roomTypeWith(hotelId, { depositAmount: 800_000, maxGuests: 3 });
    await api.setInventory(other.id, day(40), day(44), 3);
    const elsewhere = await roomType(3, 40, 44, (await api.hotel({ city: 'HCM' })).id);
    const usd = await api.roomTypeWith(hotelId, { depositAmount: 100, currency: 'USD' });
    const b = await holdStay({ roomTypeId: a, checkIn: day(40), checkOut: day(42), rooms: 2 });
    for (const [roomTypeId, field] of [[elsewhere, 'roomTypeId'], [usd.id, 'roomTypeId']] as const) {
      const r = await change(h, b.id, b.token, { roomTypeId });
      expect([r.status, r.json.error.details?.field]).toEqual([400, field]);
    }
    const body = await changed(h, b.id, operatorToken(h), { roomTypeId: other.id, checkOut: day(43) });
    expect(body).toMatchObject({ roomTypeId: other.id, depositAmount: 1_600_000, totalAmount: null, change: { depositDelta: 600_000 } });
    const { change: _c, ...view } = body;
    expect(view).toEqual(await getBooking(h, b.id)); // the booking as GET shows it
    expect(await counts(a, 40, 43)).toEqual(['0/0', '0/0', '0/0']);
    expect(await counts(other.id, 40, 43)).toEqual(['2/0', '2/0', '2/0']);
    await inventoryHolds();
  });
});

describe('rate plans and quotes', () => {
  async function pricedStay() {
    const rt = await roomType(4, 50, 58);
    const plan = await api.ratePlan(rt);
    await api.setCalendar(plan.id, { from: day(50), to: day(58), price: 1_000_000 });
    await api.setCalendar(plan.id, { from: day(52), to: day(53), price: 2_000_000 });
    const b = await holdStay({ roomTypeId: rt, checkIn: day(50), checkOut: day(52), rooms: 2, ratePlanId: plan.id });
    return { rt, plan, b };
  }

  it('the total is the plan\'s nights of the new stay × rooms; a quote for the new stay works as for a hold', async () => {
    const { plan, b } = await pricedStay();
    expect((await changed(h, b.id, b.token, { checkOut: day(53) })).totalAmount).toBe(2 * (1_000_000 + 1_000_000 + 2_000_000));
    const q = await api.quote(b.customerId, { roomTypeId: (await getBooking(h, b.id)).roomTypeId, ratePlanId: plan.id, checkIn: day(51), checkOut: day(54), rooms: 1 });
    expect(q.status, q.text).toBe(200);
    const before = await footprint(h, b.id);
    // The quote is for one room from day 51: any other terms are 400 quoteId.
    let r = await change(h, b.id, b.token, { checkIn: day(51), checkOut: day(54), quoteId: q.json.quoteId });
    expect([r.status, r.json.error.details?.field]).toEqual([400, 'quoteId']);
    // A quote of another customer is not found.
    const foreign = await api.quote(newCustomer(h).id, { roomTypeId: before.row.roomTypeId, ratePlanId: plan.id, checkIn: day(51), checkOut: day(54) });
    r = await change(h, b.id, b.token, { checkIn: day(51), checkOut: day(54), rooms: 1, quoteId: foreign.json.quoteId });
    expect(r.status).toBe(404);
    // The calendar changes after the quote: PRICE_CHANGED, nothing moved.
    await api.setCalendar(plan.id, { from: day(53), to: day(54), price: 1_500_000 });
    r = await change(h, b.id, b.token, { checkIn: day(51), checkOut: day(54), rooms: 1, quoteId: q.json.quoteId });
    expect([r.status, r.json.error.code, r.json.error.details]).toEqual([409, 'PRICE_CHANGED', { quotedTotal: 4_000_000, currentTotal: 4_500_000 }]);
    await h.sql(`UPDATE quote SET valid_until = now() - interval '1 second' WHERE id = $1`, [q.json.quoteId]);
    r = await change(h, b.id, b.token, { checkIn: day(51), checkOut: day(54), rooms: 1, quoteId: q.json.quoteId });
    expect([r.status, r.json.error.code]).toEqual([409, 'QUOTE_EXPIRED']);
    expect(await footprint(h, b.id)).toEqual(before);
    const fresh = await api.quote(b.customerId, { roomTypeId: before.row.roomTypeId, ratePlanId: plan.id, checkIn: day(51), checkOut: day(54), rooms: 1 });
    const body = await changed(h, b.id, b.token, { checkIn: day(51), checkOut: day(54), rooms: 1, quoteId: fresh.json.quoteId });
    expect([body.totalAmount, body.depositAmount]).toEqual([fresh.json.totalAmount, 500_000]);
    expect((await footprint(h, b.id)).row).toMatchObject({ quoteId: fresh.json.quoteId, nightPrices: '{1000000,2000000,1500000}' });
  });

  it('restrictions are checked on the new stay (409 STAY_RESTRICTED, unchanged); a change without a quote drops the old one', async () => {
    const { plan, b } = await pricedStay();
    await api.setCalendar(plan.id, { from: day(54), to: day(55), stopSell: true });
    const before = await footprint(h, b.id);
    const r = await change(h, b.id, b.token, { checkOut: day(56) });
    expect([r.status, r.json.error.code, r.json.error.details]).toEqual([409, 'STAY_RESTRICTED', { reason: 'stop_sell', date: day(54) }]);
    expect(await footprint(h, b.id)).toEqual(before);
    // Moving to a room type without a plan of it: no rate plan, no total.
    const plain = await roomType(4, 50, 58);
    const body = await changed(h, b.id, b.token, { roomTypeId: plain });
    expect([body.ratePlanId, body.totalAmount]).toEqual([null, null]);
    expect((await changedEvents(h, b.id))[0]).toMatchObject({ kind: 'stay', before: { ratePlanId: plan.id, rooms: 2 }, after: { roomTypeId: plain, ratePlanId: null }, totalAmount: null });
  });
});

describe('ON_TRIP stays: only the checkOut', () => {
  it('extends the stay of a guest who checked in; checkIn (or rooms) is 409 INVALID_STATE', async () => {
    const rt = await roomType(2, 60, 66);
    const b = await holdStay({ roomTypeId: rt, checkIn: day(60), checkOut: day(62) });
    await confirm(h, b);
    expect((await h.req('POST', `/bookings/${b.id}/pickup`, { token: operatorToken(h) })).status).toBe(200);
    const body = await changed(h, b.id, operatorToken(h), { checkOut: day(64) });
    expect(body).toMatchObject({ status: 'ON_TRIP', checkOut: day(64), depositAmount: 500_000, change: { depositDelta: 0 } });
    expect(await counts(rt, 60, 65)).toEqual(['0/1', '0/1', '0/1', '0/1', '0/0']);
    for (const bad of [{ checkIn: day(61) }, { rooms: 2 }]) {
      const r = await change(h, b.id, b.token, bad);
      expect([r.status, r.json.error.code], JSON.stringify(bad)).toEqual([409, 'INVALID_STATE']);
    }
  });
});

describe('many changes at once', () => {
  it('changes, holds and cancellations racing on shared nights of two room types: counts equal the live stays, no deadlock', async () => {
    const rts = [await roomType(4, 70, 80), await roomType(4, 70, 80)];
    const rng = prng(18);
    const bookings: Hold[] = [];
    for (let i = 0; i < 12; i++) {
      const start = 70 + rng.int(0, 6);
      bookings.push(await holdStay({ roomTypeId: rts[i % 2], checkIn: day(start), checkOut: day(start + rng.int(1, 3)) }));
    }
    const ops = await mapLimit(120, 12, async (i) => {
      const kind = rng.weighted({ change: 6, hold: 3, cancel: 1 });
      if (kind === 'hold') {
        const start = 70 + rng.int(0, 7);
        return h.req('POST', '/bookings', { token: newCustomer(h).token, body: { roomTypeId: rng.pick(rts), checkIn: day(start), checkOut: day(start + rng.int(1, 2)) } });
      }
      const b = bookings[i % bookings.length]!;
      if (kind === 'cancel') return h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} });
      const start = 70 + rng.int(0, 6);
      const body = { checkIn: day(start), checkOut: day(start + rng.int(1, 3)), rooms: rng.int(1, 2), ...(rng.next() < 0.3 ? { roomTypeId: rng.pick(rts) } : {}) };
      return change(h, b.id, b.token, body);
    });
    const lastConcurrent = Date.now();
    expect(ops.filter((r) => r.status >= 500)).toEqual([]);
    expect(Object.keys(tally(ops)).every((k) => ['200', '201', '409 SOLD_OUT', '409 INVALID_STATE', '400 VALIDATION'].includes(k)), JSON.stringify(tally(ops))).toBe(true);
    expect(await inventoryHolds()).toBeGreaterThan(0);
    await expectNoDeadlocks(h, lastConcurrent);
  }, 60_000);
});
