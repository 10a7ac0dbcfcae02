import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ZodTypeAny } from 'zod';
import { carSearchQuery, fastCarSearchQuery } from '../../api/schemas/cars.js';
import { availabilityQuery, fastAvailabilityQuery } from '../../api/schemas/hotels.js';
import { carHoldBody, fastCarHoldBody } from '../../api/schemas/bookings.js';
import { fastId, fastInstant, fastIsoDate, fastQueryInt, fastText, id, instant, isoDate, queryInt, text } from '../../api/schemas/common.js';

// The fast paths of api/schemas (common.ts, "Fast paths") must answer exactly what their zod schema answers: the
// same value when it accepts, and nothing (null: the schema decides and words the refusal) when it refuses. Each
// is held to its schema on arbitrary input, and each is complete on its common case (it answers whenever the schema
// accepts), so a fast path that gave up on everything could not pass either.

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Instants as clients write them, and near misses: offsets, fractions, impossible dates and times, odd years. */
const instantText = fc.oneof(
  fc.date({ min: new Date(Date.UTC(-50, 0, 1)), max: new Date(Date.UTC(10050, 0, 1)), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.record({
    y: fc.integer({ min: 0, max: 10_000 }), mo: fc.integer({ min: 0, max: 13 }), d: fc.integer({ min: 0, max: 32 }),
    h: fc.integer({ min: 0, max: 25 }), mi: fc.integer({ min: 0, max: 61 }), s: fc.option(fc.integer({ min: 0, max: 61 })),
    frac: fc.option(fc.stringMatching(/^[0-9]{1,9}$/)),
    zone: fc.oneof(fc.constant('Z'), fc.constant(''), fc.constant('z'), fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 }), fc.boolean())
      .map(([sign, oh, om, colon]) => `${sign}${pad(oh)}${colon ? ':' : ''}${pad(om)}`)),
    sep: fc.constantFrom('T', 'T', 'T', ' ', 't'),
  }).map(({ y, mo, d, h, mi, s, frac, zone, sep }) =>
    `${pad(y, 4)}-${pad(mo)}-${pad(d)}${sep}${pad(h)}:${pad(mi)}${s === null ? '' : `:${pad(s)}${frac === null ? '' : `.${frac}`}`}${zone}`),
  fc.string({ maxLength: 30 }),
);

/** Dates as clients write them, and near misses: impossible days, year 0000, short fields, times attached. */
const dateText = fc.oneof(
  fc.date({ min: new Date(Date.UTC(-50, 0, 1)), max: new Date(Date.UTC(10050, 0, 1)), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.record({ y: fc.integer({ min: 0, max: 10_000 }), mo: fc.integer({ min: 0, max: 13 }), d: fc.integer({ min: 0, max: 32 }) })
    .map(({ y, mo, d }) => `${pad(y, 4)}-${pad(mo)}-${pad(d)}`),
  fc.constantFrom('2031-1-01', '2031-01-1', '20310101', '2031-01-01T00:00:00Z', ' 2031-01-01', '2031-01-01 ', '0000-12-31', '0001-01-01', '9999-12-31'),
  fc.string({ maxLength: 12 }),
);
const goodDate = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));

/** Instants a client in a hurry sends: the common case, so that the accepting side is reached often. */
const goodInstant = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
const mostlyGood = (other: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: goodInstant, weight: 4 }, { arbitrary: other, weight: 1 });

/** Values of any type a JSON body or a query string can carry. */
const anyValue = fc.oneof(
  instantText,
  fc.string({ maxLength: 60, unit: 'binary' }),
  fc.integer(), fc.double(), fc.constantFrom(0, -1, 1, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, NaN, Infinity, 1.5),
  fc.boolean(), fc.constant(null), fc.constant(undefined),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }),
);

/** City names with the edges of text(50): blanks around, control characters, lone surrogates, lengths near 50. */
const cityText = fc.oneof(
  fc.constantFrom('Hanoi', 'HCM', '  Da Nang ', '', '   ', 'x'.repeat(50), ` ${'x'.repeat(50)} `, 'x'.repeat(51), 'a\u0000b', 'a\tb', 'a\ud800b', '\u00a0Huế\u00a0'),
  fc.string({ maxLength: 60, unit: 'binary' }),
  fc.string({ maxLength: 60, unit: 'grapheme' }),
);

type Outcome = { ok: true; value: unknown } | { ok: false };
const viaZod = (schema: ZodTypeAny, v: unknown): Outcome => {
  const r = schema.safeParse(v);
  return r.success ? { ok: true, value: r.data } : { ok: false };
};
const viaFast = (value: unknown): Outcome => (value === null ? { ok: false } : { ok: true, value });

describe('schema fast paths answer exactly what their schema answers', () => {
  it('instant', () => {
    let accepted = 0;
    fc.assert(fc.property(fc.oneof(instantText, anyValue), (v) => {
      const z = viaZod(instant, v);
      expect(viaFast(fastInstant(v))).toEqual(z);
      if (z.ok) accepted++;
    }), { numRuns: 5000 });
    expect(accepted).toBeGreaterThan(500); // the generator reaches the accepting side, not only refusals
  });

  it('text(50)', () => {
    fc.assert(fc.property(fc.oneof(cityText, anyValue), (v) => {
      expect(viaFast(fastText(v, 50))).toEqual(viaZod(text(50), v));
    }), { numRuns: 3000 });
  });

  it('id', () => {
    fc.assert(fc.property(anyValue, (v) => {
      expect(viaFast(fastId(v))).toEqual(viaZod(id, v));
    }), { numRuns: 3000 });
  });

  it('the car hold body', () => {
    const body = fc.record({ carId: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 1e6 }), weight: 4 }, { arbitrary: anyValue, weight: 1 }),
      from: mostlyGood(fc.oneof(instantText, anyValue)), to: mostlyGood(fc.oneof(instantText, anyValue)), extra: anyValue },
    { requiredKeys: ['carId', 'from', 'to'] });
    let accepted = 0;
    fc.assert(fc.property(fc.oneof({ arbitrary: body, weight: 4 }, { arbitrary: anyValue, weight: 1 }), (v) => {
      const z = viaZod(carHoldBody, v);
      expect(viaFast(fastCarHoldBody(v))).toEqual(z);
      if (z.ok) accepted++;
    }), { numRuns: 5000 });
    expect(accepted).toBeGreaterThan(200);
  });

  it('queryInt(50, 1, 200)', () => {
    const limit = fc.oneof(fc.constantFrom('1', '50', '200', '0', '201', ' 7 ', '', '1e2', '3.5', '0x10', '-1', 'Infinity', 'NaN', ['7'], ['7', '8']), anyValue);
    fc.assert(fc.property(limit, (v) => {
      expect(viaFast(fastQueryInt(v, 50, 1, 200))).toEqual(viaZod(queryInt(50, 1, 200), v));
    }), { numRuns: 3000 });
  });

  it('the car search query (a query string: values are strings or arrays)', () => {
    const value = fc.oneof(fc.string({ maxLength: 40 }), fc.array(fc.string({ maxLength: 8 }), { minLength: 2, maxLength: 3 }));
    const query = fc.record({
      city: fc.oneof(cityText, value), from: mostlyGood(fc.oneof(instantText, value)), to: mostlyGood(fc.oneof(instantText, value)),
      limit: fc.oneof({ arbitrary: fc.constantFrom('1', '50', '200', '0', '201', ' 7 ', '', '1e2', '3.5'), weight: 3 }, { arbitrary: value, weight: 1 }), other: value,
    }, { requiredKeys: ['city', 'from', 'to'] }).chain((q) => fc.boolean().map((dropAny) => {
      if (!dropAny) return q;
      const { city: _c, ...rest } = q;
      return rest;
    }));
    let accepted = 0;
    fc.assert(fc.property(query, (q) => {
      const z = viaZod(carSearchQuery, q);
      expect(viaFast(fastCarSearchQuery(q))).toEqual(z);
      if (z.ok) accepted++;
    }), { numRuns: 5000 });
    expect(accepted).toBeGreaterThan(100);
  });
  it('isoDate', () => {
    let accepted = 0;
    fc.assert(fc.property(fc.oneof(dateText, anyValue), (v) => {
      const z = viaZod(isoDate, v);
      expect(viaFast(fastIsoDate(v))).toEqual(z);
      if (z.ok) accepted++;
    }), { numRuns: 5000 });
    expect(accepted).toBeGreaterThan(500);
  });

  it('the availability query (a query string: values are strings or arrays)', () => {
    const value = fc.oneof(fc.string({ maxLength: 20 }), fc.array(fc.string({ maxLength: 8 }), { minLength: 2, maxLength: 3 }));
    const day = fc.oneof({ arbitrary: goodDate, weight: 4 }, { arbitrary: fc.oneof(dateText, value), weight: 1 });
    const query = fc.record({
      city: fc.oneof(cityText, value), checkIn: day, checkOut: day,
      rooms: fc.oneof({ arbitrary: fc.constantFrom('1', '2', '100', '0', '101', ' 7 ', '', '1e1', '3.5'), weight: 3 }, { arbitrary: value, weight: 1 }), other: value,
    }, { requiredKeys: ['city', 'checkIn', 'checkOut'] });
    let accepted = 0;
    fc.assert(fc.property(query, (q) => {
      const z = viaZod(availabilityQuery, q);
      expect(viaFast(fastAvailabilityQuery(q))).toEqual(z);
      if (z.ok) accepted++;
    }), { numRuns: 5000 });
    expect(accepted).toBeGreaterThan(100);
  });
});
