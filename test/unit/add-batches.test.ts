import { describe, expect, it } from 'vitest';
import { AddBatches, MAX_BATCH } from '../../shared/queues/add-batches.js';

describe('AddBatches (group commit of job adds)', () => {
  it('sends the adds of one turn as one batch, and the adds made while it is in flight as the next one', async () => {
    const sent: number[][] = [];
    let release!: () => void;
    const b = new AddBatches<number>(async (jobs) => {
      sent.push(jobs);
      if (sent.length === 1) await new Promise<void>((r) => (release = r));
    });
    const first = [b.add([1]), b.add([2, 3])];
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([[1, 2, 3]]);
    const second = [b.add([4]), b.add([5])];
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(1); // still in flight: 4 and 5 wait for it
    release();
    await Promise.all([...first, ...second]);
    expect(sent).toEqual([[1, 2, 3], [4, 5]]);
  });

  it('a failed batch rejects its callers only; the next batch is sent', async () => {
    let calls = 0;
    const b = new AddBatches<number>(async () => {
      calls++;
      if (calls === 1) throw new Error('redis down');
    });
    const failed = [b.add([1]), b.add([2])];
    const results = await Promise.allSettled(failed);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await expect(b.add([3])).resolves.toBeUndefined();
    expect(calls).toBe(2);
  });

  it(`carries at most ${MAX_BATCH} jobs a batch`, async () => {
    const sent: number[] = [];
    const b = new AddBatches<number>(async (jobs) => void sent.push(jobs.length));
    await Promise.all(Array.from({ length: MAX_BATCH * 2 + 1 }, (_, i) => b.add([i])));
    expect(sent).toEqual([MAX_BATCH, MAX_BATCH, 1]);
  });
});

describe('AddBatches with a linger (lazy adds)', () => {
  it('gathers the adds of the linger into one batch, sent only once it has passed', async () => {
    const sent: { jobs: number[]; at: number }[] = [];
    const b = new AddBatches<number>(async (jobs) => void sent.push({ jobs, at: Date.now() }), { lingerMs: 40 });
    const t0 = Date.now();
    const first = b.add([1]);
    await new Promise((r) => setTimeout(r, 10));
    const second = b.add([2, 3]);
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([]); // nothing left on the next turn
    expect(b.pending).toBe(3);
    await Promise.all([first, second]);
    expect(sent.map((s) => s.jobs)).toEqual([[1, 2, 3]]);
    expect(sent[0]!.at - t0).toBeGreaterThanOrEqual(35); // the timer's own slack: a few ms
    expect(b.pending).toBe(0);
  });

  it('drain sends what lingers now, and what waits behind a batch in flight after it', async () => {
    const sent: number[][] = [];
    let release!: () => void;
    const b = new AddBatches<number>(async (jobs) => {
      sent.push(jobs);
      if (sent.length === 1) await new Promise<void>((r) => (release = r));
    }, { lingerMs: 60_000 });
    const first = b.add([1]);
    const draining = b.drain();
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([[1]]); // not after a minute
    const second = b.add([2]); // behind the one in flight
    release();
    await draining;
    await Promise.all([first, second]);
    expect(sent).toEqual([[1], [2]]);
  });

  it('a batch that waited behind one in flight longer than its linger leaves as soon as that one is back', async () => {
    const sent: number[][] = [];
    let release!: () => void;
    const b = new AddBatches<number>(async (jobs) => {
      sent.push(jobs);
      if (sent.length === 1) await new Promise<void>((r) => (release = r));
    }, { lingerMs: 20 });
    const first = b.add([1]);
    await new Promise((r) => setTimeout(r, 30));
    expect(sent).toEqual([[1]]);
    const second = b.add([2]);
    await new Promise((r) => setTimeout(r, 30)); // its linger is over, but the first is still in flight
    expect(sent).toEqual([[1]]);
    const t = Date.now();
    release();
    await Promise.all([first, second]);
    expect(sent).toEqual([[1], [2]]);
    expect(Date.now() - t).toBeLessThan(15);
  });
});
