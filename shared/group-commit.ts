/**
 * Group commit: requests that arrive while the database is busy share one statement. At most `maxInFlight`
 * statements run at once; whatever arrives meanwhile waits and leaves, up to `maxBatch` at a time, as soon as one
 * finishes. Nothing waits for a timer: when nothing is in flight a request leaves on the next turn of the event loop
 * (setImmediate, so the requests parsed in the same turn leave together), alone if it is alone. Under load the
 * batches grow by themselves, which is what cuts the per-request cost (one round trip, one plan, one WAL flush for
 * many); at low load nothing changes.
 *
 * With `key`, one batch never holds two inputs of the same key: the later one waits, in arrival order, for a batch
 * of its own (a statement must not race itself for one row).
 */
export interface GroupCommitOptions<I, O> {
  /** Runs one batch: one settled result per input, in input order. A throw fails every input of the batch. */
  run(batch: readonly I[]): Promise<readonly PromiseSettledResult<O>[]>;
  maxInFlight: number;
  maxBatch: number;
  key?: (input: I) => string | number;
}

interface Waiting<I, O> {
  input: I;
  resolve(o: O): void;
  reject(e: unknown): void;
}

export class GroupCommit<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly opts: GroupCommitOptions<I, O>) {
    if (!(opts.maxInFlight >= 1 && opts.maxBatch >= 1)) throw new Error('GroupCommit needs maxInFlight >= 1 and maxBatch >= 1');
  }

  /** Settles with this input's own result once its batch ran. */
  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.schedule();
    });
  }

  /** Requests waiting for a statement (not counting the ones in flight). */
  get queued(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.opts.maxInFlight && this.waiting.length > 0) void this.send(this.take());
  }

  /** The next batch: the oldest waiting inputs, at most one per key, at most maxBatch; the rest keep their order. */
  private take(): Waiting<I, O>[] {
    const { key, maxBatch } = this.opts;
    if (!key) return this.waiting.splice(0, maxBatch);
    const batch: Waiting<I, O>[] = [];
    const left: Waiting<I, O>[] = [];
    const keys = new Set<string | number>();
    let i = 0;
    for (; i < this.waiting.length && batch.length < maxBatch; i++) {
      const w = this.waiting[i]!;
      const k = key(w.input);
      if (keys.has(k)) left.push(w);
      else {
        keys.add(k);
        batch.push(w);
      }
    }
    // A full batch stops the scan: a long queue is not walked once per statement.
    this.waiting = i === this.waiting.length ? left : left.concat(this.waiting.slice(i));
    return batch;
  }

  private async send(batch: Waiting<I, O>[]): Promise<void> {
    this.inFlight++;
    try {
      const results = await this.opts.run(batch.map((w) => w.input));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} got ${results.length} results`);
      results.forEach((r, i) => (r.status === 'fulfilled' ? batch[i]!.resolve(r.value) : batch[i]!.reject(r.reason)));
    } catch (e) {
      for (const w of batch) w.reject(e);
    } finally {
      this.inFlight--;
      this.flush();
    }
  }
}
