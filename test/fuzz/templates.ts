import { expect } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { HOST_ID, newCar } from '../helpers/cars.js';
import { OPERATOR_ID } from '../helpers/bookings.js';
import { stayApi } from '../helpers/stays.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import type { Caller } from '../helpers/access-matrix.js';

// The valid request of every operation the endpoint fuzz starts from, for each caller the contract lets through:
// a booking to cancel is the caller's own (or on the host's car), each car hold takes a period no other takes, a
// booking to pick up is CONFIRMED first. Unmutated, each must reach its documented success (the fuzz asserts it).

/** What a field holds, so its hostile values are of its kind too (an instant gets impossible offsets). */
export type Kind = 'instant' | 'date' | 'timezone' | 'currency' | 'amount' | 'any';

export interface Template {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: Record<string, unknown>;
  kinds?: Record<string, Kind>;
}

export interface Fixtures {
  carId: number;
  bookingId: number;
  deposit: number;
  hotelId: number;
  /** Sold on the rate plan; holds and quotes take its nights 1–59. */
  roomTypeId: number;
  ratePlanId: number;
  quoteId: number;
  /** No hold ever takes its nights: inventory writes on it never meet INVENTORY_BELOW_COMMITTED. */
  spareRoomTypeId: number;
}

/** Who each caller is; the owner owns the fixtures' booking and quote, the car's host hosts the fixture car. */
export const SUB: Record<Exclude<Caller, 'anonymous'>, number> = {
  owner: 500, otherCustomer: 501, carHost: HOST_ID, otherHost: HOST_ID + 1, operator: OPERATOR_ID,
};

export const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
const instantKinds = { from: 'instant', to: 'instant' } as const;
const dateKinds = { from: 'date', to: 'date', checkIn: 'date', checkOut: 'date' } as const;

/** A slot no earlier call got: distinct car periods (8 h apart: 4 h hold + 2 h turnaround) and stay nights. */
let slots = 0;
const nextSlot = () => slots++;
const carPeriod = () => {
  const start = 24 * 40 + nextSlot() * 8;
  return { from: inHours(start), to: inHours(start + 4) };
};
/** A 2-night stay among nights 2–56 of the fixture room type (50 rooms a night: never sold out by the fuzz). */
const stayNights = () => {
  const n = 2 + (nextSlot() % 55);
  return { checkIn: day(n), checkOut: day(n + 2) };
};

export async function createFixtures(h: Harness): Promise<Fixtures> {
  const ok = (r: { status: number; text: string }, status: number) => expect(r.status, r.text).toBe(status);
  const carId = await newCar(h, { depositAmount: 1_500_000 });
  const hold = await h.req('POST', '/bookings', { token: h.token(SUB.owner, 'customer'), body: { carId, ...carPeriod() } });
  ok(hold, 201);
  const stays = stayApi(h);
  const hotel = await stays.hotel({ city: 'HCM' });
  const rt = await stays.roomType(hotel.id, 400_000);
  await stays.setInventory(rt.id, day(1), day(60), 50);
  const spare = await stays.roomType(hotel.id, 300_000);
  const plan = await h.req('POST', `/room-types/${rt.id}/rate-plans`, { token: stays.operator, body: { name: 'Base' } });
  ok(plan, 201);
  ok(await h.req('PUT', `/rate-plans/${plan.json.id}/calendar`, { token: stays.operator, body: { from: day(1), to: day(60), reason: 'setup', price: 800_000 } }), 200);
  const quote = await h.req('POST', '/quotes', { token: h.token(SUB.owner, 'customer'), body: { roomTypeId: rt.id, ratePlanId: plan.json.id, checkIn: day(20), checkOut: day(22) } });
  ok(quote, 200);
  return {
    carId, bookingId: hold.json.bookingId, deposit: 1_500_000, hotelId: hotel.id, roomTypeId: rt.id, ratePlanId: plan.json.id,
    quoteId: quote.json.quoteId, spareRoomTypeId: spare.id,
  };
}

/** A fresh booking of the owner on the fixture car, brought to `state` (its setup checked: a broken one fails the test). */
async function bookingIn(h: Harness, fx: Fixtures, state: 'HOLD' | 'CONFIRMED' | 'ON_TRIP', period = carPeriod()): Promise<number> {
  const r = await h.req('POST', '/bookings', { token: h.token(SUB.owner, 'customer'), body: { carId: fx.carId, ...period } });
  expect(r.status, r.text).toBe(201);
  const id = r.json.bookingId as number;
  if (state !== 'HOLD') expect((await signedWebhook(h, paymentSucceeded(id, r.json.depositAmount))).status).toBe(200);
  if (state === 'ON_TRIP') expect((await h.req('POST', `/bookings/${id}/pickup`, { token: h.token(OPERATOR_ID, 'operator') })).status).toBe(200);
  return id;
}

export interface TemplateContext {
  h: Harness;
  fx: Fixtures;
  caller: Caller;
}

/**
 * Templates of operations another branch brings (their ACCESS row is `pending`): not an operation here yet, so the
 * coverage test lets them be, until the operation is served.
 */
export const AWAITED_TEMPLATES: Record<string, string> = {};

/** One template per operation; an operation without one fails the coverage test, so a new route cannot be forgotten. */
export const TEMPLATES: Record<string, (c: TemplateContext) => Template | Promise<Template>> = {
  health: () => ({}),
  ready: () => ({}),
  metrics: () => ({}),
  openapi: () => ({}),
  docs: () => ({}),
  docsAsset: () => ({ params: { asset: 'init.js' } }),
  createCar: ({ caller }) => ({
    body: {
      plate: `F-${nextSlot().toString(36)}`, model: 'Morning', city: 'HN', dailyPrice: 500_000, depositAmount: 1_000_000, currency: 'VND', turnaroundMinutes: 60,
      ...(caller === 'operator' ? { hostId: HOST_ID } : {}),
    },
    kinds: { currency: 'currency', dailyPrice: 'amount', depositAmount: 'amount' },
  }),
  searchCars: () => ({ query: { city: 'HN', from: inHours(48), to: inHours(72), limit: '10' }, kinds: instantKinds }),
  holdBooking: ({ fx }) => (nextSlot() % 2 === 0
    ? { body: { carId: fx.carId, ...carPeriod() }, kinds: instantKinds }
    : { body: { roomTypeId: fx.roomTypeId, ...stayNights(), rooms: 1, guests: 1, ratePlanId: fx.ratePlanId }, kinds: dateKinds }),
  getBooking: ({ fx }) => ({ params: { id: String(fx.bookingId) } }),
  getBookingTimeline: ({ fx }) => ({ params: { id: String(fx.bookingId) }, query: { limit: '50' } }),
  payBooking: ({ fx }) => ({ params: { id: String(fx.bookingId) } }),
  cancelBooking: async ({ h, fx }) => ({ params: { id: String(await bookingIn(h, fx, 'HOLD')) }, body: { reason: 'changed my mind' } }),
  // Its return an hour later: still clear of the next slot's period (8 h apart, 4 h held, 2 h turnaround).
  changeBooking: async ({ h, fx }) => {
    const period = carPeriod();
    const to = new Date(new Date(period.to).getTime() + 3_600_000).toISOString();
    return { params: { id: String(await bookingIn(h, fx, 'HOLD', period)) }, body: { to }, kinds: instantKinds };
  },
  pickupBooking: async ({ h, fx }) => ({ params: { id: String(await bookingIn(h, fx, 'CONFIRMED')) } }),
  returnBooking: async ({ h, fx }) => ({ params: { id: String(await bookingIn(h, fx, 'ON_TRIP')) } }),
  paymentWebhook: () => ({}),
  searchStays: () => ({ query: { city: 'HCM', checkIn: day(20), checkOut: day(22), rooms: '1' }, kinds: dateKinds }),
  createHotel: () => ({ body: { name: 'Fuzz Hotel', city: 'HCM', timezone: 'Asia/Ho_Chi_Minh', checkInTime: '14:00' }, kinds: { timezone: 'timezone' } }),
  createRoomType: ({ fx }) => ({ params: { hotelId: String(fx.hotelId) }, body: { name: 'Twin', depositAmount: 300_000, currency: 'VND', maxGuests: 2 },
    kinds: { currency: 'currency', depositAmount: 'amount' },
  }),
  setInventory: ({ fx }) => ({ params: { roomTypeId: String(fx.spareRoomTypeId) }, body: { from: day(30), to: day(32), sellable: 5, reason: 'fuzz' }, kinds: dateKinds }),
  getInventory: ({ fx }) => ({ params: { roomTypeId: String(fx.roomTypeId) }, query: { from: day(1), to: day(30) }, kinds: dateKinds }),
  getInventoryAudit: ({ fx }) => ({
    params: { roomTypeId: String(fx.roomTypeId) }, query: { from: day(1), to: day(30), limit: '10', cursor: Buffer.from('{"a":0,"x":[],"l":0}').toString('base64url') }, kinds: dateKinds,
  }),
  createRatePlan: ({ fx }) => ({ params: { roomTypeId: String(fx.roomTypeId) }, body: { name: 'Fuzz plan' } }),
  // Nights no hold or quote of the fuzz asks for: a hostile calendar write there never restricts a later valid request.
  setCalendar: ({ fx }) => ({ params: { ratePlanId: String(fx.ratePlanId) }, body: { from: day(62), to: day(64), reason: 'fuzz', price: 700_000, minStay: 1 }, kinds: { ...dateKinds, price: 'amount' } }),
  getCalendar: ({ fx }) => ({ params: { ratePlanId: String(fx.ratePlanId) }, query: { from: day(1), to: day(30) }, kinds: dateKinds }),
  createQuote: ({ fx }) => ({ body: { roomTypeId: fx.roomTypeId, ratePlanId: fx.ratePlanId, ...stayNights(), rooms: 1, guests: 1 }, kinds: dateKinds }),
  getQuote: ({ fx }) => ({ params: { quoteId: String(fx.quoteId) } }),
};
