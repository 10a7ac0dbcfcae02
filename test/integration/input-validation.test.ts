import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { bookingCount } from '../helpers/bookings.js';
import { withCarHarness } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';

let h: Harness;
let carId: number;
withCarHarness((f) => ({ h, carId } = f));

describe('invalid input → 400 VALIDATION and nothing written', () => {
  const cases: [string, () => { raw?: string; body?: unknown; headers?: Record<string, string> }][] = [
    ['missing fields', () => ({ body: { carId } })],
    ['from ≥ to', () => ({ body: { carId, from: inHours(30), to: inHours(30) } })],
    ['past from', () => ({ body: { carId, from: inHours(-1), to: inHours(3) } })],
    ['span over 30 days', () => ({ body: { carId, from: inHours(24), to: inHours(24 + 30 * 24 + 1) } })],
    ['instant without offset', () => ({ body: { carId, from: '2031-01-01T10:00:00', to: '2031-01-01T12:00:00' } })],
    ['wrong types', () => ({ body: { carId: '1', from: 5, to: true } })],
    ['non-positive id', () => ({ body: { carId: -3, from: inHours(30), to: inHours(31) } })],
    ['non-integer id', () => ({ body: { carId: 1.5, from: inHours(30), to: inHours(31) } })],
    ['non-JSON', () => ({ raw: '{"carId": 1,', headers: { 'content-type': 'application/json' } })],
    ['JSON array', () => ({ body: [1, 2] })],
    ['empty body', () => ({ raw: '' })],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const before = await bookingCount(h);
      const r = await h.req('POST', '/bookings', { token: newCustomer(h).token, ...make() });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('VALIDATION');
      expect(typeof r.json.error.message).toBe('string');
      expect(await bookingCount(h)).toBe(before);
    });
  }

  it('body over 1 MiB → 413 VALIDATION with details.field = body', async () => {
    const r = await h.req('POST', '/bookings', { token: newCustomer(h).token, raw: JSON.stringify({ carId, pad: 'x'.repeat(1024 * 1024) }), headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(413);
    expect(r.json.error).toMatchObject({ code: 'VALIDATION', details: { field: 'body' } });
  });

  it('search validation: missing city, from ≥ to, limit over 200', async () => {
    for (const q of ['from=2031-01-01T00:00:00Z&to=2031-01-02T00:00:00Z', `city=HN&from=${encodeURIComponent(inHours(5))}&to=${encodeURIComponent(inHours(4))}`, `city=HN&from=${encodeURIComponent(inHours(5))}&to=${encodeURIComponent(inHours(6))}&limit=201`]) {
      const r = await h.req('GET', `/cars?${q}`);
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('VALIDATION');
    }
  });
});
