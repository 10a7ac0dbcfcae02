import { describe, expect, it } from 'vitest';
import { lagFromSamples, PROBE_INTERVAL_MS } from '../../shared/read-replica.js';
import { parseConfig, replicaLagBudget } from '../../shared/config.js';

describe('read replica lag', () => {
  const samples = [{ at: 1_000, lsn: 100n }, { at: 1_500, lsn: 100n }, { at: 2_000, lsn: 250n }, { at: 2_500, lsn: 400n }];
  it('is 0 s old at the newest sample when the replica has replayed all of it (an idle primary included)', () => {
    expect(lagFromSamples(samples, 400n, 2_500)).toBe(0);
    expect(lagFromSamples([{ at: 1_000, lsn: 7n }, { at: 9_000, lsn: 7n }], 7n, 9_000)).toBe(0);
  });
  it('is as old as the newest sample the replica has replayed past, however far it received', () => {
    expect(lagFromSamples(samples, 300n, 2_600)).toBeCloseTo(0.6);
    expect(lagFromSamples(samples, 100n, 3_000)).toBe(1.5);
  });
  it('is older than the whole history when the replica is behind every sample, and unknown with no history', () => {
    expect(lagFromSamples(samples, 50n, 3_000)).toBe(2 + PROBE_INTERVAL_MS / 1000);
    expect(lagFromSamples([], 50n, 3_000)).toBe(Infinity);
  });
});

describe('DATABASE_READ_URL config', () => {
  const url = 'postgres://postgres@127.0.0.1:55433/booking';
  it('defaults the lag bound to 5 s and leaves the search cache room under SEARCH_CACHE_TTL_S', () => {
    const c = parseConfig({ DATABASE_READ_URL: url });
    expect(c.DATABASE_READ_MAX_LAG_S).toBe(5);
    expect(replicaLagBudget(c)).toBe(6);
    expect(replicaLagBudget(parseConfig({}))).toBe(0);
  });
  it('refuses a lag bound that leaves the search cache no room under SEARCH_CACHE_TTL_S, naming it', () => {
    expect(() => parseConfig({ DATABASE_READ_URL: url, DATABASE_READ_MAX_LAG_S: '30' })).toThrow(/DATABASE_READ_MAX_LAG_S: .*at most 28/);
    expect(() => parseConfig({ DATABASE_READ_URL: url, SEARCH_CACHE_TTL_S: '0' })).toThrow(/DATABASE_READ_MAX_LAG_S/);
    expect(() => parseConfig({ DATABASE_READ_MAX_LAG_S: '30' })).not.toThrow();
  });
  it('treats an empty DATABASE_READ_URL as unset and never echoes it in an error', () => {
    expect(parseConfig({ DATABASE_READ_URL: '' }).DATABASE_READ_URL).toBeUndefined();
    expect(() => parseConfig({ DATABASE_READ_URL: 'not a url secret-pw' })).toThrow(/DATABASE_READ_URL/);
    try { parseConfig({ DATABASE_READ_URL: 'not a url secret-pw' }); } catch (e) { expect((e as Error).message).not.toContain('secret-pw'); }
  });
});
