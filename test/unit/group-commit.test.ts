import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../shared/group-commit.js';

type Results<O> = readonly PromiseSettledResult<O>[];

/** One full turn of the event loop: whatever GroupCommit scheduled with setImmediate has left by then. */
const turn = () => new Promise<void>((r) => setImmediate(r));

const fulfilled = <O>(value: O): PromiseSettledResult<O> => ({ status: 'fulfilled', value });

/** A run that answers at once, each input doubled, and records every batch it got. */
function doubling() {
  const batches: number[][] = [];
  const run = async (batch: readonly number[]): Promise<Results<number>> => {
    batches.push([...batch]);
    return batch.map((x) => fulfilled(x * 2));
  };
  return { run, batches };
}

/** A run that holds every batch open until the test releases it by hand, and counts how many are open at once. */
function held<I>() {
  const batches: { inputs: I[]; release(): void }[] = [];
  let open = 0;
  let maxOpen = 0;
  const run = (batch: readonly I[]): Promise<Results<I>> => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    return new Promise((resolve) => {
      batches.push({
        inputs: [...batch],
        release: () => {
          open--;
          resolve(batch.map(fulfilled));
        },
      });
    });
  };
  return { run, batches, open: () => open, maxOpen: () => maxOpen };
}

describe('GroupCommit', () => {
  it('a lone submit runs as a batch of 1 and resolves with its own result', async () => {
    const { run, batches } = doubling();
    const gc = new GroupCommit({ run, maxInFlight: 4, maxBatch: 10 });
    await expect(gc.submit(21)).resolves.toBe(42);
    expect(batches).toEqual([[21]]);
  });

  it('submits made in the same event-loop turn leave together as one batch, in arrival order', async () => {
    const { run, batches } = doubling();
    const gc = new GroupCommit({ run, maxInFlight: 4, maxBatch: 10 });
    const all = Promise.all([gc.submit(3), gc.submit(1), gc.submit(2)]);
    await expect(all).resolves.toEqual([6, 2, 4]);
    expect(batches).toEqual([[3, 1, 2]]);
  });

  it('runs at most maxInFlight batches at once; the rest wait for a free slot', async () => {
    const h = held<string>();
    const gc = new GroupCommit({ run: h.run, maxInFlight: 2, maxBatch: 1 });
    const early = ['a', 'b', 'c', 'd'].map((x) => gc.submit(x));
    await turn();
    expect(h.batches.map((x) => x.inputs)).toEqual([['a'], ['b']]);
    expect(gc.queued).toBe(2);
    h.batches[0]!.release();
    await turn();
    expect(h.batches.map((x) => x.inputs)).toEqual([['a'], ['b'], ['c']]);
    const late = gc.submit('e'); // arrives while both slots are taken
    await turn();
    expect(h.batches).toHaveLength(3);
    for (let i = 1; i < 5; i++) {
      h.batches[i]!.release();
      await turn();
      expect(h.open()).toBeLessThanOrEqual(2);
    }
    await expect(Promise.all([...early, late])).resolves.toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(h.batches.map((x) => x.inputs)).toEqual([['a'], ['b'], ['c'], ['d'], ['e']]);
    expect(h.maxOpen()).toBe(2);
  });

  it('what waited while the batches were in flight leaves as one batch as soon as one finishes', async () => {
    const h = held<number>();
    const gc = new GroupCommit({ run: h.run, maxInFlight: 2, maxBatch: 10 });
    const first = [gc.submit(1)];
    await turn();
    first.push(gc.submit(2));
    await turn();
    const waiting = [gc.submit(3), gc.submit(4)];
    await turn();
    const five = gc.submit(5);
    await turn();
    expect(h.batches).toHaveLength(2);
    h.batches[1]!.release(); // batch [1] is still open: one free slot is enough
    await turn();
    expect(h.batches.map((x) => x.inputs)).toEqual([[1], [2], [3, 4, 5]]);
    h.batches[0]!.release();
    h.batches[2]!.release();
    await expect(Promise.all([...first, ...waiting, five])).resolves.toEqual([1, 2, 3, 4, 5]);
  });

  it('a batch never holds more than maxBatch inputs; the rest follow in arrival order', async () => {
    const { run, batches } = doubling();
    const gc = new GroupCommit({ run, maxInFlight: 1, maxBatch: 2 });
    const all = Promise.all([1, 2, 3, 4, 5].map((x) => gc.submit(x)));
    await expect(all).resolves.toEqual([2, 4, 6, 8, 10]);
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('with key, one batch never holds two inputs of the same key: the later one goes in a following batch, order kept', async () => {
    const batches: string[][] = [];
    const run = async (batch: readonly { k: number; v: string }[]): Promise<Results<string>> => {
      batches.push(batch.map((x) => x.v));
      return batch.map((x) => fulfilled(x.v.toUpperCase()));
    };
    const gc = new GroupCommit({ run, maxInFlight: 1, maxBatch: 10, key: (x) => x.k });
    const inputs = [{ k: 1, v: 'a' }, { k: 2, v: 'b' }, { k: 1, v: 'c' }, { k: 3, v: 'd' }, { k: 1, v: 'e' }, { k: 2, v: 'f' }];
    const all = Promise.all(inputs.map((x) => gc.submit(x)));
    await expect(all).resolves.toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
    expect(batches).toEqual([['a', 'b', 'd'], ['c', 'f'], ['e']]);
  });

  it("a 'rejected' result rejects only its own input", async () => {
    const boom = new Error('row 2 refused');
    const run = async (batch: readonly number[]): Promise<Results<number>> =>
      batch.map((x) => (x === 2 ? { status: 'rejected', reason: boom } : fulfilled(x * 10)));
    const gc = new GroupCommit({ run, maxInFlight: 1, maxBatch: 10 });
    const settled = await Promise.allSettled([gc.submit(1), gc.submit(2), gc.submit(3)]);
    expect(settled).toEqual([fulfilled(10), { status: 'rejected', reason: boom }, fulfilled(30)]);
  });

  it.each([
    ['throws', (e: Error) => { throw e; }],
    ['rejects', (e: Error) => Promise.reject(e)],
  ])('run that %s rejects every input of the batch, and later submits still work', async (_, fail) => {
    const boom = new Error('statement failed');
    let calls = 0;
    const run = (batch: readonly number[]): Promise<Results<number>> =>
      ++calls === 1 ? fail(boom) : Promise.resolve(batch.map((x) => fulfilled(x)));
    const gc = new GroupCommit({ run, maxInFlight: 1, maxBatch: 10 });
    const settled = await Promise.allSettled([gc.submit(1), gc.submit(2)]);
    expect(settled).toEqual([{ status: 'rejected', reason: boom }, { status: 'rejected', reason: boom }]);
    await expect(gc.submit(3)).resolves.toBe(3);
  });

  it.each([
    ['too few', 1],
    ['too many', 3],
  ])('run returning %s results rejects every input of the batch', async (_, count) => {
    const run = async (): Promise<Results<string>> => Array.from({ length: count }, () => fulfilled('x'));
    const gc = new GroupCommit({ run, maxInFlight: 1, maxBatch: 10 });
    const settled = await Promise.allSettled([gc.submit('a'), gc.submit('b')]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    for (const s of settled) expect((s as PromiseRejectedResult).reason).toEqual(new Error(`a batch of 2 got ${count} results`));
  });

  it.each([
    [0, 1],
    [1, 0],
  ])('the constructor refuses maxInFlight %i with maxBatch %i', (maxInFlight, maxBatch) => {
    const run = async (): Promise<Results<never>> => [];
    expect(() => new GroupCommit({ run, maxInFlight, maxBatch })).toThrow(/maxInFlight >= 1 and maxBatch >= 1/);
  });

  it('queued counts the inputs waiting, not the ones in flight', async () => {
    const h = held<number>();
    const gc = new GroupCommit({ run: h.run, maxInFlight: 1, maxBatch: 10 });
    expect(gc.queued).toBe(0);
    const first = gc.submit(1);
    expect(gc.queued).toBe(1);
    await turn();
    expect(gc.queued).toBe(0);
    const rest = [gc.submit(2), gc.submit(3)];
    await turn();
    expect(gc.queued).toBe(2);
    h.batches[0]!.release();
    await turn();
    expect(gc.queued).toBe(0);
    h.batches[1]!.release();
    await expect(Promise.all([first, ...rest])).resolves.toEqual([1, 2, 3]);
  });
});
