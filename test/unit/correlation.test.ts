import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { currentCorrelation, parseTraceparent, traceparentFor, withCorrelation } from '../../shared/correlation.js';
import { metricsPortOf } from '../../shared/metrics/server.js';

const shape = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

describe('traceparent', () => {
  it("keeps a caller's valid trace and flags, with a new parent id", () => {
    const incoming = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
    const out = traceparentFor('any', incoming);
    expect(out).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$/);
    expect(out).not.toContain('00f067aa0ba902b7');
    expect(traceparentFor('any', incoming.toUpperCase())).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-/);
  });

  it('draws a new parent id each time, across refills of its random pool (2,000 ids, 512 a pool)', () => {
    const ids = Array.from({ length: 2000 }, () => traceparentFor('any').split('-')[2]!);
    expect(new Set(ids).size).toBe(2000);
    for (const id of ids) expect(id).toMatch(/^(?!0{16})[0-9a-f]{16}$/);
  });

  it('derives the trace id from the request id when the caller sent none or an invalid one', () => {
    const uuid = '3f2a1c9e-8b7d-4e6f-9a0b-1c2d3e4f5a6b';
    expect(traceparentFor(uuid)).toMatch(new RegExp(`^00-${uuid.replace(/-/g, '')}-[0-9a-f]{16}-01$`));
    const sha = createHash('sha256').update('order 7').digest('hex').slice(0, 32);
    for (const bad of [undefined, '', 'garbage', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01']) {
      expect(traceparentFor('order 7', bad), String(bad)).toMatch(new RegExp(`^00-${sha}-`));
    }
    expect(traceparentFor('00000000-0000-0000-0000-000000000000')).toMatch(shape);
    expect(traceparentFor('00000000-0000-0000-0000-000000000000')).not.toMatch(/^00-0{32}-/);
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', flags: '01' });
  });

  it('is carried through awaits by withCorrelation, and absent outside it', async () => {
    const c = { requestId: 'r-1', traceparent: traceparentFor('r-1') };
    const seen = await withCorrelation(c, async () => {
      await new Promise((r) => setTimeout(r, 5));
      return currentCorrelation();
    });
    expect(seen).toEqual(c);
    expect(currentCorrelation()).toBeUndefined();
  });
});

describe('metrics ports', () => {
  it('puts each worker kind at METRICS_PORT_BASE + its offset; METRICS_PORT overrides, 0 turns it off', () => {
    const base = { METRICS_PORT: undefined, METRICS_PORT_BASE: 9100 };
    expect(['expiry', 'refunds', 'notifications', 'pump', 'maintenance'].map((k) => metricsPortOf(k, base)))
      .toEqual([9101, 9102, 9103, 9104, 9106]);
    expect(metricsPortOf('expiry', { ...base, METRICS_PORT_BASE: 5710 })).toBe(5711);
    expect(metricsPortOf('api', base)).toBeNull();
    expect(metricsPortOf('dashboard', base)).toBeNull();
    expect(metricsPortOf('expiry', { ...base, METRICS_PORT: 7000 })).toBe(7000);
    expect(metricsPortOf('expiry', { ...base, METRICS_PORT: 0 })).toBeNull();
  });
});
