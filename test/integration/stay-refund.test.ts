import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fixedClock } from '../helpers/clock.js';
import { newCustomerId } from '../helpers/customers.js';
import { checkStayInvariants, stayApi } from '../helpers/stays.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

// The server's clock is pinned just before the Berlin spring-forward of 2027 (last Sunday of March = the 28th).
const clock = fixedClock('2027-03-20T09:00:00Z');
let h: Harness;
let api: ReturnType<typeof stayApi>;
beforeAll(async () => {
  h = await startHarness({ clock });
});
afterAll(async () => h?.close());

describe('stay cancellation refund (server clock, hotel time zone, DST)', () => {
  it('a CONFIRMED stay cancelled by its customer gets the policy refund; an operator cancel gets 100 %', async () => {
    api = stayApi(h);
    const hotel = await api.hotel({ city: 'Berlin', timezone: 'Europe/Berlin' }); // checkInTime defaults to 14:00
    const rt = await api.roomType(hotel.id, 1_000_001, 'Doppelzimmer');
    await api.setInventory(rt.id, '2027-03-27', '2027-03-31', 10);

    /** A stay held and paid (webhook signed at the server's clock) → CONFIRMED. */
    const confirmedStay = async (checkIn: string, checkOut: string, rooms: number) => {
      const customer = newCustomerId();
      const held = await api.hold(customer, rt.id, checkIn, checkOut, rooms);
      expect(held.status, held.text).toBe(201);
      expect(held.json.holdExpiresAt).toBe(new Date(clock.now().getTime() + h.config.HOLD_TTL_S * 1000).toISOString());
      const paid = await signedWebhook(h, paymentSucceeded(held.json.bookingId, held.json.depositAmount), { t: clock.now().getTime() / 1000 });
      expect(paid.status, paid.text).toBe(200);
      const b = await h.req('GET', `/bookings/${held.json.bookingId}`, { token: h.token(customer, 'customer') });
      expect(b.json.status).toBe('CONFIRMED');
      return { id: held.json.bookingId as number, customer, deposit: held.json.depositAmount as number };
    };
    const cancel = async (s: { id: number; customer: number }, at: string, token = h.token(s.customer, 'customer')) => {
      clock.set(at);
      const r = await h.req('POST', `/bookings/${s.id}/cancel`, { token, body: { reason: 'plans changed' } });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ bookingId: s.id, status: 'CANCELLED', currency: 'VND' });
      return r.json.refundAmount as number;
    };

    // Check-in 2027-03-28 14:00 CEST = 12:00Z. Exactly 72 h before (2027-03-25 12:00Z): 100 %.
    const a = await confirmedStay('2027-03-28', '2027-03-30', 1);
    expect(await cancel(a, '2027-03-25T12:00:00Z')).toBe(1_000_001);
    // One minute later: floor(50 %) of deposit × rooms. (Wall-clock arithmetic in CET would still say 100 %.)
    clock.set('2027-03-20T09:00:00Z');
    const b = await confirmedStay('2027-03-28', '2027-03-29', 2);
    expect(b.deposit).toBe(2_000_002);
    expect(await cancel(b, '2027-03-25T12:01:00Z')).toBe(1_000_001);
    // Check-in the day before, 2027-03-27 14:00 CET = 13:00Z: at 2027-03-24 12:30Z that is still ≥ 72 h.
    clock.set('2027-03-20T09:00:00Z');
    const c = await confirmedStay('2027-03-27', '2027-03-28', 1);
    expect(await cancel(c, '2027-03-24T12:30:00Z')).toBe(1_000_001);
    // Under 24 h (2027-03-27 12:01Z before 2027-03-28 12:00Z): nothing back.
    clock.set('2027-03-20T09:00:00Z');
    const d = await confirmedStay('2027-03-28', '2027-03-29', 1);
    expect(await cancel(d, '2027-03-27T12:01:00Z')).toBe(0);
    // Same timing, cancelled by an operator: everything back.
    clock.set('2027-03-20T09:00:00Z');
    const e = await confirmedStay('2027-03-28', '2027-03-29', 1);
    expect(await cancel(e, '2027-03-27T12:01:00Z', api.operator)).toBe(1_000_001);

    // Refunds are recorded PENDING (paid asynchronously) with those amounts, and the rooms are free again.
    const view = async (s: { id: number; customer: number }) =>
      (await h.req('GET', `/bookings/${s.id}`, { token: h.token(s.customer, 'customer') })).json;
    expect((await view(a)).refund).toEqual({ amount: 1_000_001, status: 'PENDING' });
    expect((await view(b)).refund).toEqual({ amount: 1_000_001, status: 'PENDING' });
    expect((await view(d)).refund).toBeNull();
    expect((await view(e)).refund).toEqual({ amount: 1_000_001, status: 'PENDING' });
    for (const n of await api.nights(rt.id, '2027-03-27', '2027-03-31')) expect([n.held, n.confirmed]).toEqual([0, 0]);
    await checkStayInvariants(h, [rt.id]);
  });

  it('Asia/Ho_Chi_Minh (UTC+7, no DST): 72 h before 14:00 local is 07:00Z three days earlier', async () => {
    api = stayApi(h);
    const hotel = await api.hotel({ city: 'HCM', timezone: 'Asia/Ho_Chi_Minh', checkInTime: '14:00' });
    const rt = await api.roomType(hotel.id, 3_000_000);
    await api.setInventory(rt.id, '2027-03-28', '2027-03-29', 5);
    const hold = async () => {
      clock.set('2027-03-20T09:00:00Z');
      const customer = newCustomerId();
      const r = await api.hold(customer, rt.id, '2027-03-28', '2027-03-29');
      expect(r.status).toBe(201);
      expect((await signedWebhook(h, paymentSucceeded(r.json.bookingId, 3_000_000), { t: clock.now().getTime() / 1000 })).status).toBe(200);
      return { id: r.json.bookingId as number, token: h.token(customer, 'customer') };
    };
    const cancelAt = async (at: string) => {
      const s = await hold();
      clock.set(at);
      const r = await h.req('POST', `/bookings/${s.id}/cancel`, { token: s.token, body: {} });
      expect(r.status, r.text).toBe(200);
      return r.json.refundAmount as number;
    };
    expect(await cancelAt('2027-03-25T07:00:00Z')).toBe(3_000_000);
    expect(await cancelAt('2027-03-25T07:00:01Z')).toBe(1_500_000);
    expect(await cancelAt('2027-03-27T07:00:00Z')).toBe(1_500_000);
    expect(await cancelAt('2027-03-27T07:00:01Z')).toBe(0);
    await checkStayInvariants(h, [rt.id]);
  });
});
