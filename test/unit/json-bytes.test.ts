import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonBytes, digitCount, envelope, joinJson, utf8 } from '../../shared/domain/json-bytes.js';

describe('json-bytes', () => {
  it('joins items into the bytes JSON.stringify writes for the enveloped array (any text, any count)', () => {
    fc.assert(fc.property(fc.string(), fc.array(fc.record({ name: fc.string({ unit: 'binary' }), n: fc.integer() }), { maxLength: 12 }), (key, items) => {
      const got = joinJson(envelope(key), items.map((i) => utf8(JSON.stringify(i))));
      expect(got.toString('utf8')).toBe(JSON.stringify({ [key]: items }));
    }));
  });

  it('writes a non-negative safe integer as its decimal digits', () => {
    fc.assert(fc.property(fc.oneof(fc.nat(), fc.maxSafeNat(), fc.constantFrom(0, 9, 10, 99, 100, Number.MAX_SAFE_INTEGER)), (n) => {
      expect(digitCount(n)).toBe(String(n).length);
      const out = new JsonBytes(digitCount(n));
      out.int(n, digitCount(n));
      expect(out.done().toString('latin1')).toBe(String(n));
    }));
  });

  it('refuses an answer whose size was added up wrongly rather than send stray bytes', () => {
    const out = new JsonBytes(3);
    out.bytes(utf8('[]'));
    expect(() => out.done()).toThrow(/wrote 2 of 3/);
  });
});
