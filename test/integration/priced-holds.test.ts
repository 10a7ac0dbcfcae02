import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { fixedClock } from '../helpers/clock.js';
import { checkStayInvariants } from '../helpers/stays.js';
import { codeOf, pricedDay, pricedHarness, type PricedHarness, type rateApi } from '../helpers/rates.js';

// Contract: POST /bookings stay body {roomTypeId, checkIn, checkOut, rooms?, guests?, ratePlanId?, quoteId?}, the 201
// answer's totalAmount, GET /bookings/{id} guests / ratePlanId / totalAmount, booking.held's totalAmount, car prices.
// The default hold limit (3 per customer) is on: refusals must not count.
const clock = fixedClock('2027-03-20T09:00:00Z');
let h: Harness;
let api: ReturnType<typeof rateApi>;
let pricedRoomType: PricedHarness['pricedRoomType'];
let heldOf: PricedHarness['heldNights'];
beforeAll(async () => ({ h, api, pricedRoomType, heldNights: heldOf } = await pricedHarness(clock)));
afterAll(async () => h?.close());

const d = pricedDay;
const bookingRow = async (id: number) =>
  (await h.sql(`SELECT guests, rate_plan_id::int AS "ratePlanId", quote_id::int AS "quoteId", total_amount::float8 AS "totalAmount",
                       array_to_json(night_prices) AS "nightPrices" FROM booking WHERE id = $1`, [id])).rows[0];
const heldEvent = async (bookingId: number) =>
  (await h.sql(`SELECT payload FROM outbox WHERE topic = 'booking.held' AND message_key = $1`, [String(bookingId)])).rows[0]?.payload;

describe('stay holds on a rate plan', () => {
  it('totalAmount = Σ nightly price × rooms; the booking keeps guests, ratePlanId, totalAmount and its nightly prices', async () => {
    const { rt, plan } = await pricedRoomType();
    const c = api.nextCustomer();
    const r = await api.holdStay(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(1), checkOut: d(4), rooms: 2, guests: 4 });
    expect(r.status, r.text).toBe(201);
    const total = 2 * (1_200_000 + 1_100_000 + 900_000);
    expect(r.json).toEqual({
      bookingId: expect.any(Number), kind: 'stay', status: 'HOLD', holdExpiresAt: expect.any(String),
      depositAmount: 1_000_000, totalAmount: total, currency: 'VND', paymentUrl: expect.stringContaining('/pay'),
    });
    const g = await api.booking(c, r.json.bookingId);
    expect(g.json).toEqual({
      bookingId: r.json.bookingId, kind: 'stay', status: 'HOLD', customerId: c, carId: null, from: null, to: null,
      roomTypeId: rt.id, checkIn: d(1), checkOut: d(4), rooms: 2, depositAmount: 1_000_000, currency: 'VND',
      holdExpiresAt: r.json.holdExpiresAt, guests: 4, ratePlanId: plan.id, totalAmount: total, payment: null, refund: null,
    });
    expect(await bookingRow(r.json.bookingId)).toEqual({ guests: 4, ratePlanId: plan.id, quoteId: null, totalAmount: total, nightPrices: [1_200_000, 1_100_000, 900_000] });
    expect(await heldEvent(r.json.bookingId)).toMatchObject({ totalAmount: total, depositAmount: 1_000_000, ratePlanId: plan.id, guests: 4, currency: 'VND' });

    // A later price change never rewrites the booking.
    await api.setCalendar(plan.id, { from: d(0), to: d(6), price: 5 });
    expect((await api.booking(c, r.json.bookingId)).json.totalAmount).toBe(total);
    expect((await bookingRow(r.json.bookingId)).nightPrices).toEqual([1_200_000, 1_100_000, 900_000]);
    await checkStayInvariants(h, [rt.id]);
  });

  it('without ratePlanId: no restriction or price is checked and totalAmount is null; guests default to 1', async () => {
    const { rt } = await pricedRoomType();
    const c = api.nextCustomer();
    // d(4)..d(6) have no price on the plan: irrelevant without ratePlanId.
    const r = await api.holdStay(c, { roomTypeId: rt.id, checkIn: d(3), checkOut: d(6) });
    expect(r.status, r.text).toBe(201);
    expect(r.json.totalAmount).toBeNull();
    expect((await api.booking(c, r.json.bookingId)).json).toMatchObject({ guests: 1, ratePlanId: null, totalAmount: null, rooms: 1 });
    expect(await heldEvent(r.json.bookingId)).toMatchObject({ totalAmount: null });
  });

  it('400: another room type\'s plan (ratePlanId), guests above maxGuests × rooms (guests), checkIn before today; nothing held', async () => {
    const { rt, plan } = await pricedRoomType({ maxGuests: 2 });
    const other = await pricedRoomType();
    const c = api.nextCustomer();
    const base = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(2) };
    const field = async (body: Record<string, unknown>) => {
      const r = await api.holdStay(c, body);
      return `${codeOf(r)} ${r.json?.error?.details?.field ?? ''}`.trim();
    };
    expect(await field({ ...base, ratePlanId: other.plan.id })).toBe('400 VALIDATION ratePlanId');
    expect(await field({ ...base, guests: 3 })).toBe('400 VALIDATION guests');
    expect(await field({ roomTypeId: rt.id, checkIn: d(0), checkOut: d(2), guests: 3 })).toBe('400 VALIDATION guests');
    expect(await field({ ...base, checkIn: '2027-03-19', checkOut: '2027-03-21' })).toBe('400 VALIDATION checkIn');
    expect(await field({ ...base, ratePlanId: 999_999 })).toBe('404 NOT_FOUND');
    for (const bad of [{ guests: 0 }, { guests: 2.5 }, { guests: '2' }, { ratePlanId: 0 }, { ratePlanId: 'x' }, { quoteId: -1 }, { quoteId: 1e400 }, { guests: 1e400 }]) {
      expect(codeOf(await api.holdStay(c, { ...base, ...bad })), JSON.stringify(bad)).toBe('400 VALIDATION');
    }
    expect(await api.bookingCount(rt.id)).toBe(0);
    // None of these counted towards the customer's 3 holds.
    for (let i = 0; i < 3; i++) expect((await api.holdStay(c, { ...base, checkIn: d(i), checkOut: d(i + 1) })).status).toBe(201);
    expect(codeOf(await api.holdStay(c, { ...base, checkIn: d(3), checkOut: d(4) }))).toBe('429 RATE_LIMITED');
  });
});

describe('stay holds with a quote', () => {
  it('the customer\'s unexpired quote for this very request, still at its total → held at that total', async () => {
    clock.set('2027-03-20T09:00:00Z');
    const { rt, plan } = await pricedRoomType();
    const c = api.nextCustomer();
    const stay = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(2), rooms: 1, guests: 2 };
    const q = (await api.quote(c, stay)).json;
    expect(q.totalAmount).toBe(2_200_000);
    const r = await api.holdStay(c, { ...stay, quoteId: q.quoteId });
    expect(r.status, r.text).toBe(201);
    expect(r.json.totalAmount).toBe(2_200_000);
    expect(await bookingRow(r.json.bookingId)).toMatchObject({ quoteId: q.quoteId, totalAmount: 2_200_000, nightPrices: [1_000_000, 1_200_000] });
    // Defaults count as given: a quote for rooms 1 / guests 1 matches a body that leaves them out.
    const q1 = (await api.quote(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(2), checkOut: d(3) })).json;
    expect((await api.holdStay(c, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(2), checkOut: d(3), quoteId: q1.quoteId, rooms: 1 })).status).toBe(201);
    // A quote is not used up by a hold while it is valid (it reserves nothing; see README).
    expect((await api.holdStay(c, { ...stay, quoteId: q.quoteId })).status).toBe(201);
  });

  it('refusals: 400 without ratePlanId, 404 another customer\'s, 400 quoteId when the body differs, 409 QUOTE_EXPIRED, 409 PRICE_CHANGED; nothing held, nothing counted', async () => {
    clock.set('2027-03-20T09:00:00Z');
    const { rt, plan } = await pricedRoomType();
    const plan2 = await api.ratePlan(rt.id);
    await api.setCalendar(plan2.id, { from: d(0), to: d(6), price: 1_000_000 });
    const c = api.nextCustomer();
    const stay = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(3), rooms: 1, guests: 3 };
    const q = (await api.quote(c, stay)).json;
    const refusal = async (body: Record<string, unknown>, customer = c) => {
      const r = await api.holdStay(customer, body);
      return { code: codeOf(r), field: r.json?.error?.details?.field, details: r.json?.error?.details };
    };
    const { ratePlanId: _omit, ...withoutPlan } = stay;
    expect(await refusal({ ...withoutPlan, quoteId: q.quoteId })).toMatchObject({ code: '400 VALIDATION', field: 'ratePlanId' });
    expect(await refusal({ ...stay, quoteId: q.quoteId }, api.nextCustomer())).toMatchObject({ code: '404 NOT_FOUND' });
    expect(await refusal({ ...stay, quoteId: 987_654_321 })).toMatchObject({ code: '404 NOT_FOUND' });
    for (const diff of [{ rooms: 2 }, { guests: 2 }, { checkIn: d(1) }, { checkOut: d(2) }, { ratePlanId: plan2.id }, { guests: undefined }]) {
      expect(await refusal({ ...stay, ...diff, quoteId: q.quoteId }), JSON.stringify(diff)).toMatchObject({ code: '400 VALIDATION', field: 'quoteId' });
    }
    // Price changed: the details say both totals; back at the quoted price, the quote holds again.
    await api.setCalendar(plan.id, { from: d(1), to: d(2), price: 1_250_000, reason: 'demand' });
    expect(await refusal({ ...stay, quoteId: q.quoteId })).toEqual({
      code: '409 PRICE_CHANGED', field: undefined, details: { quotedTotal: 3_300_000, currentTotal: 3_350_000 },
    });
    // A restriction that appeared since the quote is reported as such.
    await api.setCalendar(plan.id, { from: d(2), to: d(3), stopSell: true });
    expect(await refusal({ ...stay, quoteId: q.quoteId })).toMatchObject({ code: '409 STAY_RESTRICTED', details: { reason: 'stop_sell', date: d(2) } });
    await api.setCalendar(plan.id, { from: d(2), to: d(3), stopSell: false });
    await api.setCalendar(plan.id, { from: d(1), to: d(2), price: 1_200_000, reason: 'back' });
    // Expired: valid up to validUntil itself, refused 1 ms later (even at the quoted price).
    clock.set(q.validUntil);
    clock.advance(1);
    expect(await refusal({ ...stay, quoteId: q.quoteId })).toMatchObject({ code: '409 QUOTE_EXPIRED' });
    expect(await api.bookingCount(rt.id)).toBe(0);
    expect(await heldOf(rt.id)).toEqual([0, 0, 0, 0, 0, 0]);
    clock.set(q.validUntil);
    // None of the refusals counted: the customer still has all 3 holds.
    for (let i = 0; i < 3; i++) expect((await api.holdStay(c, { ...stay, quoteId: q.quoteId })).status).toBe(201);
    expect(await heldOf(rt.id)).toEqual([3, 3, 3, 0, 0, 0]);
    await checkStayInvariants(h, [rt.id]);
    clock.set('2027-03-20T09:00:00Z');
  });

  it('Idempotency-Key: the replay of a hold made with a quote answers the first 201, even after the quote expired', async () => {
    clock.set('2027-03-20T09:00:00Z');
    const { rt, plan } = await pricedRoomType();
    const c = api.nextCustomer();
    const stay = { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: d(0), checkOut: d(1) };
    const q = (await api.quote(c, stay)).json;
    const first = await api.holdStay(c, { ...stay, quoteId: q.quoteId }, { 'idempotency-key': 'quote-1' });
    expect(first.status).toBe(201);
    clock.advance(h.config.QUOTE_TTL_S * 1000 + 60_000);
    const again = await api.holdStay(c, { ...stay, quoteId: q.quoteId }, { 'idempotency-key': 'quote-1' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(await api.bookingCount(rt.id)).toBe(1);
    clock.set('2027-03-20T09:00:00Z');
  });
});

describe('car holds: totalAmount = dailyPrice × ceil((to − from) / 24 h)', () => {
  it('a started day counts; 201, GET and booking.held agree', async () => {
    clock.set('2027-03-20T09:00:00Z');
    const car = await h.req('POST', '/cars', {
      token: h.token(900, 'host'), body: { plate: 'PRICE-1', model: 'Vios', city: 'SGN', dailyPrice: 700_000, depositAmount: 1_500_000 },
    });
    expect(car.status).toBe(201);
    const start = Date.parse('2027-04-01T08:00:00Z');
    let offset = 0;
    for (const [minutes, days] of [[1, 1], [60, 1], [24 * 60, 1], [24 * 60 + 1, 2], [72 * 60, 3], [30 * 24 * 60, 30]] as const) {
      const from = new Date(start + offset).toISOString();
      const to = new Date(start + offset + minutes * 60_000).toISOString();
      offset += 31 * 86_400_000;
      const c = api.nextCustomer();
      const r = await h.req('POST', '/bookings', { token: h.token(c, 'customer'), body: { carId: car.json.id, from, to } });
      expect(r.status, r.text).toBe(201);
      expect(r.json.totalAmount, `${minutes} min`).toBe(700_000 * days);
      expect((await api.booking(c, r.json.bookingId)).json).toMatchObject({ totalAmount: 700_000 * days, guests: null, ratePlanId: null });
      expect(await heldEvent(r.json.bookingId)).toMatchObject({ totalAmount: 700_000 * days });
    }
  });
});
