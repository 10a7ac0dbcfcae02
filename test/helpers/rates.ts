import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import type { Clock } from '../../shared/domain/clock.js';
import type { Reply } from './http.js';
import { addDays, stayApi } from './stays.js';
import { newCustomerId } from './customers.js';
import { datesFrom } from '../../shared/domain/hotel-dates.js';
import { stayRestriction, type CalendarNight } from '../../shared/domain/rates.js';

export type { CalendarNight };

/** The contract's defaults for a night never set, with the given fields. */
export const calNight = (date: string, o: Partial<CalendarNight> = {}): CalendarNight => ({
  date, price: null, minStay: 1, maxStay: 30, closedToArrival: false, closedToDeparture: false, stopSell: false, ...o,
});

export const codeOf = (r: Reply) => (r.status >= 400 ? `${r.status} ${r.json?.error?.code}` : String(r.status));
export const tally = (rs: Reply[]) => rs.reduce<Record<string, number>>((m, r) => ((m[codeOf(r)] = (m[codeOf(r)] ?? 0) + 1), m), {});

export interface StayBody {
  roomTypeId: number;
  checkIn: string;
  checkOut: string;
  rooms?: number;
  guests?: number;
  ratePlanId?: number;
  quoteId?: number;
}

/** The hotel side (stayApi) plus rate plans, calendars, quotes and holds on a plan. */
export function rateApi(h: Harness) {
  const stays = stayApi(h);
  const operator = stays.operator;
  return {
    ...stays,
    /** A fresh customer id (see customers.ts). */
    nextCustomer: newCustomerId,
    async roomTypeWith(hotelId: number, o: { depositAmount?: number; maxGuests?: number; currency?: string } = {}) {
      const r = await h.req('POST', `/hotels/${hotelId}/room-types`, {
        token: operator, body: { name: `Room ${randomUUID().slice(0, 6)}`, depositAmount: o.depositAmount ?? 1_000_000, ...o },
      });
      expect(r.status, r.text).toBe(201);
      return r.json as { id: number; hotelId: number; depositAmount: number; currency: string; maxGuests: number };
    },
    async ratePlan(roomTypeId: number, name = `Plan ${randomUUID().slice(0, 6)}`) {
      const r = await h.req('POST', `/room-types/${roomTypeId}/rate-plans`, { token: operator, body: { name } });
      expect(r.status, r.text).toBe(201);
      return r.json as { id: number; roomTypeId: number; name: string; currency: string };
    },
    putCalendar: (ratePlanId: number, body: Record<string, unknown>, token = operator) =>
      h.req('PUT', `/rate-plans/${ratePlanId}/calendar`, { token, body: { reason: 'test', ...body } }),
    async setCalendar(ratePlanId: number, body: Record<string, unknown>) {
      const r = await this.putCalendar(ratePlanId, body);
      expect(r.status, r.text).toBe(200);
      return r.json.nights as CalendarNight[];
    },
    async calendar(ratePlanId: number, from: string, to: string) {
      const r = await h.req('GET', `/rate-plans/${ratePlanId}/calendar?from=${from}&to=${to}`, { token: operator });
      expect(r.status, r.text).toBe(200);
      return r.json.nights as CalendarNight[];
    },
    quote: (customer: number, body: StayBody | Record<string, unknown>) =>
      h.req('POST', '/quotes', { token: h.token(customer, 'customer'), body }),
    holdStay: (customer: number, body: StayBody | Record<string, unknown>, headers: Record<string, string> = {}) =>
      h.req('POST', '/bookings', { token: h.token(customer, 'customer'), body, headers }),
    booking: (customer: number, id: number) => h.req('GET', `/bookings/${id}`, { token: h.token(customer, 'customer') }),
    /**
     * A room type (deposit 500,000, maxGuests 3 unless told) with 5 rooms on the nights from..from+5 and a rate
     * plan priced `prices[i]` on night from+i.
     */
    async pricedRoomType(hotelId: number, from: string, prices: number[], o: { maxGuests?: number } = {}) {
      const rt = await this.roomTypeWith(hotelId, { depositAmount: 500_000, maxGuests: o.maxGuests ?? 3 });
      await stays.setInventory(rt.id, from, addDays(from, 6), 5);
      const plan = await this.ratePlan(rt.id);
      for (const [i, price] of prices.entries()) await this.setCalendar(plan.id, { from: addDays(from, i), to: addDays(from, i + 1), price });
      return { rt, plan };
    },
    bookingCount: async (roomTypeId: number) =>
      (await h.sql(`SELECT count(*)::int AS n FROM booking WHERE room_type_id = $1`, [roomTypeId])).rows[0].n as number,
  };
}

/** Rate ledger rows of a plan, oldest first. */
export async function rateLedger(h: Harness, ratePlanId: number) {
  const { rows } = await h.sql(
    `SELECT id::int, night::text, (extract(epoch FROM at) * 1000000)::float8 AS "atUs", at, actor, reason, before, after
     FROM rate_ledger WHERE rate_plan_id = $1 ORDER BY id`, [ratePlanId]);
  return rows as { id: number; night: string; atUs: number; at: Date; actor: string; reason: string; before: Record<string, unknown> | null; after: Record<string, unknown> }[];
}

/**
 * "Before or after, never half", checked against the two ledgers' clocks: every stay booked on the plan was
 * sold at exactly the nightly prices the calendar had when its hold moved the rooms (the hold's inventory
 * ledger time, taken under its locks), and the calendar then allowed the stay; the calendar is replayed from
 * the rate ledger up to that instant. A hold that read the calendar and committed after a change of it would
 * show up as a mismatch. Returns the number of bookings checked.
 */
export async function checkSoldAtCalendar(h: Harness, ratePlanId: number) {
  const ledger = await rateLedger(h, ratePlanId);
  const { rows: bookings } = await h.sql(
    `SELECT b.id::int, b.check_in::text AS "checkIn", b.check_out::text AS "checkOut", b.rooms, b.total_amount::float8 AS total,
            array_to_json(b.night_prices) AS prices,
            (SELECT (extract(epoch FROM min(l.at)) * 1000000)::float8 FROM inventory_ledger l WHERE l.booking_id = b.id AND l.reason = 'hold') AS "heldAtUs"
     FROM booking b WHERE b.rate_plan_id = $1 ORDER BY b.id`, [ratePlanId]);
  for (const b of bookings as { id: number; checkIn: string; checkOut: string; rooms: number; total: number; prices: number[]; heldAtUs: number }[]) {
    const at = (date: string): CalendarNight => {
      let n = calNight(date);
      for (const e of ledger) if (e.night === date && e.atUs < b.heldAtUs) n = { date, ...(e.after as Omit<CalendarNight, 'date'>) };
      return n;
    };
    const nights = datesFrom(b.checkIn, b.prices.length).map(at);
    const where = `booking ${b.id} (held at ${b.heldAtUs} µs)`;
    expect(b.prices, `${where}: prices vs the calendar then`).toEqual(nights.map((n) => n.price));
    expect(stayRestriction(nights, at(b.checkOut)), `${where}: restrictions then`).toBeNull();
    expect(b.total, `${where}: total`).toBe(b.prices.reduce((sum, p) => sum + p * b.rooms, 0));
  }
  return bookings.length;
}

/** PostgreSQL's deadlock counter for the harness database (published within 10 s of a backend going idle). */
export async function deadlocks(h: Harness, idleSince: number): Promise<number> {
  const wait = 10_500 - (Date.now() - idleSince);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const { rows } = await h.sql(`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`);
  return rows[0].n as number;
}

/** The stay most priced tests use: nights from PRICED_FROM, priced PRICES[i] on night i (see pricedRoomType). */
export const PRICED_FROM = '2027-04-10';
export const PRICES = [1_000_000, 1_200_000, 1_100_000, 900_000];
export const pricedDay = (i: number) => addDays(PRICED_FROM, i);

/** A harness on `clock` with the rate API and one hotel in Ho Chi Minh City (UTC+7). */
export async function pricedHarness(clock: Clock) {
  const h = await startHarness({ clock });
  const api = rateApi(h);
  const hotelId = (await api.hotel({ city: 'HCM', timezone: 'Asia/Ho_Chi_Minh' })).id;
  const pricedRoomType = (o: { maxGuests?: number } = {}) => api.pricedRoomType(hotelId, PRICED_FROM, PRICES, o);
  /** held on the six inventory nights of a priced room type */
  const heldNights = async (roomTypeId: number) => (await api.nights(roomTypeId, pricedDay(0), pricedDay(6))).map((n) => n.held);
  return { h, api, hotelId, pricedRoomType, heldNights };
}
export type PricedHarness = Awaited<ReturnType<typeof pricedHarness>>;
