import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { holdCar, newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { parseEvent } from '../../shared/events/payloads.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

describe('car holds', () => {
  it('50 concurrent customers on the same car and period: exactly one 201, 49 × 409', async () => {
    const carId = await newCar(h);
    const from = inHours(48), to = inHours(52);
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from, to } })),
    );
    const statuses = replies.map((r) => r.status).sort();
    const odd = replies.filter((r) => r.status !== 201 && r.status !== 409).map((r) => `${r.status} ${r.text}`);
    expect(odd, 'answers other than 201/409').toEqual([]);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);
    expect(replies.filter((r) => r.status === 409).every((r) => r.json.error.code === 'CAR_UNAVAILABLE')).toBe(true);
    const { rows } = await h.sql(`SELECT count(*)::int AS n FROM booking WHERE car_id = $1`, [carId]);
    expect(rows[0].n).toBe(1);
  });

  it('respects the turnaround buffer: [10,12) then [14,…) fine, [13,…) refused', async () => {
    const carId = await newCar(h, { turnaroundMinutes: 120 });
    const day = new Date(Date.now() + 5 * 86_400_000);
    const at = (hour: number) => new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), hour)).toISOString();
    const a = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: at(10), to: at(12) } });
    expect(a.status).toBe(201);
    const c = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: at(13), to: at(15) } });
    expect(c.status).toBe(409);
    expect(c.json.error.code).toBe('CAR_UNAVAILABLE');
    const b = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: at(14), to: at(16) } });
    expect(b.status).toBe(201);
    // Before an existing booking the new booking's own turnaround counts too: [7,9) + 2 h reaches 11:00.
    const d = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: at(7), to: at(9) } });
    expect(d.status).toBe(409);
  });

  it('search lists a car only when a hold would be accepted', async () => {
    const carId = await newCar(h, { turnaroundMinutes: 120 });
    const from = inHours(100), to = inHours(104);
    const listed = async (f: string, t: string) => {
      const r = await h.req('GET', `/cars?city=HN&from=${encodeURIComponent(f)}&to=${encodeURIComponent(t)}&limit=200`);
      expect(r.status).toBe(200);
      return (r.json.cars as { id: number }[]).some((c) => c.id === carId);
    };
    expect(await listed(from, to)).toBe(true);
    expect((await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from, to } })).status).toBe(201);
    expect(await listed(from, to)).toBe(false);
    expect(await listed(inHours(105), inHours(106))).toBe(false); // inside the buffer
    expect(await listed(inHours(106), inHours(108))).toBe(true);
    expect(await listed(inHours(97), inHours(99))).toBe(false); // its own buffer reaches into the hold
    expect(await listed(inHours(96), inHours(98))).toBe(true); // buffer ends exactly where the hold starts
  });

  it('lists no car for a period that starts in the past', async () => {
    await holdCar(h, { fromHours: 560 });
    const r = await h.req('GET', `/cars?city=HN&from=${encodeURIComponent(inHours(-1))}&to=${encodeURIComponent(inHours(2))}`);
    expect(r.status).toBe(200);
    expect(r.json.cars).toEqual([]);
  });
});

describe('booking.held of a car hold', () => {
  const heldOf = async (bookingId: number) => {
    const { rows } = await h.sql(`SELECT message_key, topic, payload, request_id, traceparent FROM outbox WHERE message_key = $1 ORDER BY id`, [String(bookingId)]);
    return rows as { message_key: string; topic: string; payload: Record<string, unknown>; request_id: string | null; traceparent: string | null }[];
  };

  it('is the same whether the hold is one statement (no Idempotency-Key) or a transaction with the key', async () => {
    const carId = await newCar(h);
    const plain = await h.req('POST', '/bookings', { token: h.token(20_001, 'customer'), body: { carId, from: inHours(30), to: inHours(33) } });
    const keyed = await h.req('POST', '/bookings', {
      token: h.token(20_002, 'customer'), headers: { 'idempotency-key': 'k-1' }, body: { carId, from: inHours(60), to: inHours(87) },
    });
    expect([plain.status, keyed.status]).toEqual([201, 201]);
    // 3 hours is one started day, 27 hours two: the car's 500 000 a day.
    expect([plain.json.totalAmount, keyed.json.totalAmount]).toEqual([500_000, 1_000_000]);
    const [a] = await heldOf(plain.json.bookingId);
    const [b] = await heldOf(keyed.json.bookingId);
    for (const [row, reply, customerId] of [[a!, plain, 20_001], [b!, keyed, 20_002]] as const) {
      expect(row.topic).toBe('booking.held');
      expect(row.message_key).toBe(String(reply.json.bookingId));
      expect(parseEvent(row.topic, row.payload)).toEqual({
        eventId: expect.any(String), type: 'booking.held', occurredAt: expect.any(String), bookingId: reply.json.bookingId, kind: 'car',
        customerId, carId, from: reply === plain ? inHours(30) : inHours(60), to: reply === plain ? inHours(33) : inHours(87),
        holdExpiresAt: reply.json.holdExpiresAt, depositAmount: 2000000, totalAmount: reply.json.totalAmount, currency: 'VND',
      });
      // The stored payload itself has every field the schema has (none left to its default).
      expect(Object.keys(row.payload).sort()).toEqual(Object.keys(parseEvent(row.topic, row.payload)!).sort());
      // Both carry the request's id and trace context.
      expect(row.request_id).toBe(reply.headers.get('x-request-id'));
      expect(row.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    }
    expect(Object.keys(a!.payload).sort()).toEqual(Object.keys(b!.payload).sort());
  });

  it('a refused hold (409) writes neither a booking nor an event', async () => {
    const carId = await newCar(h);
    const first = await h.req('POST', '/bookings', { token: h.token(20_003, 'customer'), body: { carId, from: inHours(30), to: inHours(33) } });
    const before = (await h.sql(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n;
    const second = await h.req('POST', '/bookings', { token: h.token(20_004, 'customer'), body: { carId, from: inHours(31), to: inHours(32) } });
    expect([first.status, second.status]).toEqual([201, 409]);
    expect((await h.sql(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n).toBe(before);
    expect((await h.sql(`SELECT count(*)::int AS n FROM booking WHERE car_id = $1`, [carId])).rows[0].n).toBe(1);
  });
});
