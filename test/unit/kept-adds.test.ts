import { describe, expect, it } from 'vitest';
import { KeptAdds } from '../../shared/queues/kept-adds.js';

const jobs = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ id: `j${from + i}`, job: from + i }));

describe('the failed adds a producer keeps', () => {
  it('hold at most the cap: the oldest go first', () => {
    const kept = new KeptAdds<'expiry' | 'refunds', number>(5);
    kept.keep('expiry', jobs(0, 4));
    kept.keep('refunds', jobs(4, 8));
    expect(kept.size).toBe(5);
    expect(kept.take(100)).toEqual(new Map([['expiry', [3]], ['refunds', [4, 5, 6, 7]]]));
    expect(kept.size).toBe(0);
  });

  it('keep a job once by id; kept again, it counts as the newest', () => {
    const kept = new KeptAdds<'expiry', number>(3);
    kept.keep('expiry', jobs(0, 3));
    kept.keep('expiry', [{ id: 'j0', job: 10 }]);
    kept.keep('expiry', jobs(3, 4));
    expect(kept.take(100)).toEqual(new Map([['expiry', [2, 10, 3]]]));
  });

  it('are taken a page per kind, oldest first; the rest stay', () => {
    const kept = new KeptAdds<'expiry' | 'refunds', number>(100);
    kept.keep('expiry', jobs(0, 5));
    kept.keep('refunds', jobs(5, 7));
    expect(kept.take(2)).toEqual(new Map([['expiry', [0, 1]], ['refunds', [5, 6]]]));
    expect(kept.size).toBe(3);
    expect(kept.take(2)).toEqual(new Map([['expiry', [2, 3]]]));
    expect(kept.take(2)).toEqual(new Map([['expiry', [4]]]));
  });
});
