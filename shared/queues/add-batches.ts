// Group commit for job adds: the adds callers make in one turn of the event loop, or while the previous batch is
// on its way to Redis, go as one batch (one BullMQ addBulk: one pipeline, one write). No add waits for a timer: at
// low load a batch is one add sent on the next turn; under load the batches grow by themselves. Why: BullMQ 6.7
// re-adds a queue's marker on every delayed add, and a worker blocked on the marker wakes for each one (pinned by
// test/integration/bullmq-contract.test.ts); one pipeline wakes it about once. Fewer writes for the API, too.

/** A batch takes callers until it holds this many jobs; later callers form the next batch (one caller's jobs stay together). */
export const MAX_BATCH = 500;

interface Caller {
  resolve(): void;
  reject(err: unknown): void;
}

export class AddBatches<J> {
  /** Batches not sent yet, oldest first; only the last one takes more jobs. */
  private readonly waiting: { jobs: J[]; callers: Caller[] }[] = [];
  private sending: Promise<void> | null = null;

  /** @param send adds one batch; a rejection fails every caller of that batch (each then keeps its jobs). */
  constructor(private readonly send: (jobs: J[]) => Promise<unknown>) {}

  /** Resolves once the batch carrying `jobs` has reached Redis; rejects with that batch's error. */
  add(jobs: readonly J[]): Promise<void> {
    return new Promise((resolve, reject) => {
      let last = this.waiting.at(-1);
      if (!last || last.jobs.length >= MAX_BATCH) {
        this.waiting.push((last = { jobs: [], callers: [] }));
        if (!this.sending && this.waiting.length === 1) setImmediate(() => void this.flush());
      }
      last.jobs.push(...jobs);
      last.callers.push({ resolve, reject });
    });
  }

  /** Resolves once every batch waiting or in flight now has been answered (each caller still sees its own outcome). */
  async drain(): Promise<void> {
    while (this.sending || this.waiting.length) await (this.sending ?? this.flush());
  }

  private flush(): Promise<void> {
    if (this.sending) return this.sending;
    const batch = this.waiting.shift();
    if (!batch) return Promise.resolve();
    // Started on the next microtask, so `sending` is set before the send can end (even at once).
    this.sending = Promise.resolve().then(async () => {
      try {
        await this.send(batch.jobs);
        for (const c of batch.callers) c.resolve();
      } catch (err) {
        for (const c of batch.callers) c.reject(err);
      } finally {
        this.sending = null;
        if (this.waiting.length) void this.flush();
      }
    });
    return this.sending;
  }
}
