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

describe('AddBatches.drain', () => {
  it('resolves once what waits and what is in flight have been answered, not before', async () => {
    const sent: number[][] = [];
    let release!: () => void;
    const b = new AddBatches<number>(async (jobs) => {
      sent.push(jobs);
      if (sent.length === 1) await new Promise<void>((r) => (release = r));
    });
    const first = b.add([1]);
    await new Promise((r) => setImmediate(r));
    const second = b.add([2]); // behind the one in flight
    let drained = false;
    const draining = b.drain().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(drained).toBe(false);
    release();
    await draining;
    expect(sent).toEqual([[1], [2]]);
    await Promise.all([first, second]);
  });

  it('sends a batch that has not left yet at once, and ends when nothing waits', async () => {
    const sent: number[][] = [];
    const b = new AddBatches<number>(async (jobs) => void sent.push(jobs));
    const added = b.add([7]);
    await b.drain(); // before the turn the batch would have left on
    expect(sent).toEqual([[7]]);
    await added;
    await b.drain();
  });

  it('a send that fails at once (synchronously) still frees the batches behind it', async () => {
    let calls = 0;
    const b = new AddBatches<number>(((jobs: number[]) => {
      calls++;
      if (calls === 1) throw new Error('thrown before any promise');
      return Promise.resolve(jobs);
    }) as (jobs: number[]) => Promise<unknown>);
    await expect(b.add([1])).rejects.toThrow('thrown before any promise');
    await expect(b.add([2])).resolves.toBeUndefined();
    await b.drain();
  });
});
