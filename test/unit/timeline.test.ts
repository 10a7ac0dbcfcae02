import { describe, expect, it } from 'vitest';
import { REDACTED, redact, scrubDetail } from '../../shared/domain/timeline.js';
import { decodeTimelineCursor, encodeTimelineCursor, timelinePage } from '../../shared/usecases/timeline-cursor.js';
import type { TimelineRow } from '../../shared/db/timeline.js';

describe("a booking's story never carries secrets or card data", () => {
  it('redacts every occurrence of a configured secret, at any depth, keys included', () => {
    const secret = 'sk_live_0123456789abcdef';
    const detail = { lastError: `rejected: 401 {"key":"${secret}"}`, nested: [{ [secret]: `x${secret}y` }], amount: 5 };
    expect(JSON.stringify(scrubDetail(detail, [secret]))).not.toContain(secret);
    expect(scrubDetail(detail, [secret]).amount).toBe(5);
    // Too short to be a secret worth matching (would redact common words).
    expect(redact('abc', ['abc'])).toBe('abc');
  });

  it('redacts card numbers however grouped (Luhn-valid, 13–19 digits), and leaves other numbers alone', () => {
    for (const card of ['4242424242424242', '4242 4242 4242 4242', '4242-4242-4242-4242', '378282246310005', '6011111111111117']) {
      expect(redact(`card ${card} declined`, []), card).toBe(`card ${REDACTED} declined`);
    }
    for (const other of ['4242424242424241', '2000000', '1700000000016', 'booking 123456789012345 is not a card']) {
      expect(redact(other, []), other).toBe(other);
    }
  });
});

describe('timeline cursor', () => {
  const row = (at: string, id: number, late = false): TimelineRow => ({ id, late, at, kind: 'event', type: 't', detail: {}, inFlight: ['7'] });

  it('round-trips, and refuses anything it did not give', () => {
    const c = { after: { at: '2030-01-01T00:00:00.123456Z', kind: 'event', id: 3 }, inFlight: ['12'], lateAfter: null };
    expect(decodeTimelineCursor(encodeTimelineCursor(c))).toEqual(c);
    const bad = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    for (const text of ['', 'abc', '%%', bad({ k: ['2030-01-01T00:00:00Z', 'event', 1], x: [], l: null }), bad({ k: ['2030-01-01T00:00:00.000000Z', 'event', -1], x: [], l: null }),
      bad({ k: ['2030-01-01T00:00:00.000000Z', 'event', 1], x: [], l: ['2031-01-01T00:00:00.000000Z', 'event', 1] })]) {
      expect(() => decodeTimelineCursor(text), text).toThrow(/cursor/);
    }
  });

  it('cuts a page after `limit` entries, late ones first, and says null when nothing is left', () => {
    const rows = [row('2030-01-01T00:00:00.000001Z', 1), row('2030-01-01T00:00:00.000002Z', 2), row('2030-01-01T00:00:00.000003Z', 3)];
    const first = timelinePage(rows, 2, null);
    expect(first.page.map((r) => r.id)).toEqual([1, 2]);
    expect(first.next).toEqual({ after: { at: '2030-01-01T00:00:00.000002Z', kind: 'event', id: 2 }, inFlight: ['7'], lateAfter: null });
    expect(timelinePage(rows, 3, null).next).toBeNull();
    const late = [row('2030-01-01T00:00:00.000000Z', 9, true), row('2030-01-01T00:00:00.000001Z', 10, true), rows[2]!];
    const owed = timelinePage(late, 2, first.next);
    expect(owed.page.map((r) => r.id)).toEqual([9, 10]);
    expect(owed.next).toEqual({ ...first.next, lateAfter: { at: '2030-01-01T00:00:00.000001Z', kind: 'event', id: 10 } });
  });
});
