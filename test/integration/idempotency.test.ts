import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { bookingCount } from '../helpers/bookings.js';
import { periods, withCarHarness } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';

// Idempotency-Key on POST /bookings: replayed, scoped to the customer, refused when reused for another body.
let h: Harness;
let carId: number;
const period = periods();
withCarHarness((f) => ({ h, carId } = f));

describe('idempotency', () => {
  it('replays the first answer with Idempotent-Replayed and creates nothing', async () => {
    const t = newCustomer(h).token;
    const body = { carId, ...period() };
    const first = await h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-1' } });
    expect(first.status).toBe(201);
    const before = await bookingCount(h);
    const again = await h.req('POST', '/bookings', { token: t, body: { to: body.to, from: body.from, carId }, headers: { 'idempotency-key': 'k-1' } });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(await bookingCount(h)).toBe(before);
  });

  it('refuses the same key with a different body: 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const t = newCustomer(h).token;
    await h.req('POST', '/bookings', { token: t, body: { carId, ...period() }, headers: { 'idempotency-key': 'k-2' } });
    const r = await h.req('POST', '/bookings', { token: t, body: { carId, ...period() }, headers: { 'idempotency-key': 'k-2' } });
    expect(r.status).toBe(422);
    expect(r.json.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('scopes keys to the customer', async () => {
    const a = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, ...period() }, headers: { 'idempotency-key': 'shared' } });
    const b = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, ...period() }, headers: { 'idempotency-key': 'shared' } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.json.bookingId).not.toBe(b.json.bookingId);
  });

  it('concurrent duplicates: one creates, the others get 409 IDEMPOTENCY_IN_PROGRESS or the replay; one booking', async () => {
    const t = newCustomer(h).token;
    const body = { carId, ...period() };
    const before = await bookingCount(h);
    const replies = await Promise.all(Array.from({ length: 10 }, () =>
      h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-race' } })));
    const created = replies.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.json.bookingId)).size).toBe(1);
    for (const r of replies.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.json.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    }
    expect(await bookingCount(h)).toBe(before + 1);
  });

  it('remembers a refusal: the replay of a 409 is the same 409', async () => {
    const body = { carId, ...period() };
    expect((await h.req('POST', '/bookings', { token: newCustomer(h).token, body })).status).toBe(201);
    const t = newCustomer(h).token;
    const first = await h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-409' } });
    expect(first.status).toBe(409);
    const again = await h.req('POST', '/bookings', { token: t, body, headers: { 'idempotency-key': 'k-409' } });
    expect(again.status).toBe(409);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
  });

  it('rejects keys over 255 characters', async () => {
    const r = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, ...period() }, headers: { 'idempotency-key': 'x'.repeat(256) } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('VALIDATION');
  });
});
