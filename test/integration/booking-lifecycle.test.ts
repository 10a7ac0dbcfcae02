import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { hostToken, holdCar, periods, withCarHarness } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

// Status transitions a caller asks for (cancel, pickup, return, pay) and what GET shows.
let h: Harness;
let carId: number;
const period = periods();
withCarHarness((f) => ({ h, carId } = f));

describe('lifecycle', () => {
  it('cancel twice → 409 INVALID_STATE; HOLD cancel refunds 0', async () => {
    const t = newCustomer(h).token;
    const b = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() } });
    const first = await h.req('POST', `/bookings/${b.json.bookingId}/cancel`, { token: t, body: { reason: 'changed plans' } });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ bookingId: b.json.bookingId, status: 'CANCELLED', refundAmount: 0, currency: 'VND' });
    const second = await h.req('POST', `/bookings/${b.json.bookingId}/cancel`, { token: t, body: {} });
    expect(second.status).toBe(409);
    expect(second.json.error.code).toBe('INVALID_STATE');
    const events = await h.sql(`SELECT topic FROM outbox WHERE message_key = $1 ORDER BY id`, [String(b.json.bookingId)]);
    expect(events.rows.map((r) => r.topic)).toEqual(['booking.held', 'booking.cancelled']);
  });

  it('pickup and return need CONFIRMED / ON_TRIP', async () => {
    const b = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, ...period() } });
    const id = b.json.bookingId;
    const act = async (action: 'pickup' | 'return', token = hostToken(h)) => {
      const r = await h.req('POST', `/bookings/${id}/${action}`, { token });
      return r.status === 200 ? r.json.status : `${r.status} ${r.json.error.code}`;
    };
    expect(await act('pickup')).toBe('409 INVALID_STATE');
    expect(await act('return', h.token(1, 'operator'))).toBe('409 INVALID_STATE');
    expect((await signedWebhook(h, paymentSucceeded(id, b.json.depositAmount))).status).toBe(200);
    expect(await act('return')).toBe('409 INVALID_STATE'); // CONFIRMED: not on a trip yet
    expect(await act('pickup')).toBe('ON_TRIP');
    expect(await act('pickup', h.token(1, 'operator'))).toBe('409 INVALID_STATE');
    expect(await act('return', h.token(1, 'operator'))).toBe('COMPLETED');
    expect(await act('return')).toBe('409 INVALID_STATE');
  });

  it('GET returns the contract shape', async () => {
    const { id: customerId, token: t } = newCustomer(h);
    const p = period();
    const b = await h.req('POST', '/bookings', { token: t, body: { carId, ...p } });
    expect(b.json.paymentUrl).toBe(`${h.config.PUBLIC_BASE_URL}/bookings/${b.json.bookingId}/pay`);
    const g = await h.req('GET', `/bookings/${b.json.bookingId}`, { token: t });
    expect(g.json).toEqual({
      bookingId: b.json.bookingId, kind: 'car', status: 'HOLD', customerId, carId, from: p.from, to: p.to,
      roomTypeId: null, checkIn: null, checkOut: null, rooms: null, depositAmount: 1500000, currency: 'VND',
      holdExpiresAt: b.json.holdExpiresAt, guests: null, ratePlanId: null, totalAmount: 500000, payment: null, refund: null,
    });
  });

  it('/pay on a booking that is no longer HOLD is 409', async () => {
    const b = await holdCar(h, { fromHours: 540 });
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    const r = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('INVALID_STATE');
  });
});
