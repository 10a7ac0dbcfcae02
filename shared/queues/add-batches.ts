// Group commit for job adds: the adds callers make in one turn of the event loop, or while the previous batch is
// on its way to Redis, go as one batch (one BullMQ addBulk: one pipeline, one write). Why: BullMQ 6.7 re-adds a
// queue's marker on every delayed add, and a worker blocked on the marker wakes for each one (pinned by
// test/integration/bullmq-contract.test.ts); one pipeline wakes it about once. Fewer writes for the API, too.
//
// Without a linger no add waits for a timer: at low load a batch is one add sent on the next turn; under load the
// batches grow by themselves. With `lingerMs`, a batch leaves `lingerMs` after its first add (or once the one in
// flight is back, if later): for adds nobody waits on (a job due minutes ahead), so that a steady trickle of them
// costs one pipeline and one wake of the workers per linger instead of one per add.

/** A batch takes callers until it holds this many jobs; later callers form the next batch (one caller's jobs stay together). */
export const MAX_BATCH = 500;

interface Caller {
  resolve(): void;
  reject(err: unknown): void;
}

interface Batch<J> {
  jobs: J[];
  callers: Caller[];
  /** When its first add came (Date.now()). */
  openedAt: number;
}

export interface AddBatchesOptions {
  /** How long a batch waits for more adds before it leaves (ms); 0: the next turn of the event loop. */
  lingerMs?: number;
}

export class AddBatches<J> {
  /** Batches not sent yet, oldest first; only the last one takes more jobs. */
  private readonly waiting: Batch<J>[] = [];
  private sending: Promise<void> | null = null;
  /** Cancels the scheduled send of the oldest batch; null when none is scheduled. */
  private cancelScheduled: (() => void) | null = null;
  private readonly lingerMs: number;

  /** @param send adds one batch; a rejection fails every caller of that batch (each then keeps its jobs). */
  constructor(private readonly send: (jobs: J[]) => Promise<unknown>, o: AddBatchesOptions = {}) {
    this.lingerMs = o.lingerMs ?? 0;
  }

  /** Resolves once the batch carrying `jobs` has reached Redis; rejects with that batch's error. */
  add(jobs: readonly J[]): Promise<void> {
    return new Promise((resolve, reject) => {
      let last = this.waiting.at(-1);
      if (!last || last.jobs.length >= MAX_BATCH) {
        this.waiting.push((last = { jobs: [], callers: [], openedAt: Date.now() }));
        this.schedule();
      }
      last.jobs.push(...jobs);
      last.callers.push({ resolve, reject });
    });
  }

  /** Adds waiting for their batch. */
  get pending(): number {
    return this.waiting.reduce((n, b) => n + b.jobs.length, 0);
  }

  /** Sends every waiting batch now, one after the other; resolves once all are back (callers see their own outcome). */
  async drain(): Promise<void> {
    this.clearTimer();
    while (this.sending || this.waiting.length) {
      if (this.sending) await this.sending;
      else await this.sendNext();
    }
  }

  /** The oldest waiting batch leaves on its turn (next turn, or its linger's end), unless one is in flight or due. */
  private schedule(): void {
    if (this.sending || this.cancelScheduled || this.waiting.length === 0) return;
    const wait = this.waiting[0]!.openedAt + this.lingerMs - Date.now();
    const go = () => {
      this.cancelScheduled = null;
      void this.sendNext();
    };
    if (wait > 0) {
      // A lingering batch must not keep a process alive on its own; the producer's close() drains it.
      const t = setTimeout(go, wait).unref();
      this.cancelScheduled = () => clearTimeout(t);
    } else {
      const i = setImmediate(go);
      this.cancelScheduled = () => clearImmediate(i);
    }
  }

  private clearTimer(): void {
    this.cancelScheduled?.();
    this.cancelScheduled = null;
  }

  private sendNext(): Promise<void> {
    if (this.sending) return this.sending;
    const batch = this.waiting.shift();
    if (!batch) return Promise.resolve();
    this.sending = (async () => {
      try {
        await this.send(batch.jobs);
        for (const c of batch.callers) c.resolve();
      } catch (err) {
        for (const c of batch.callers) c.reject(err);
      } finally {
        this.sending = null;
      }
    })();
    void this.sending.then(() => this.schedule());
    return this.sending;
  }
}
