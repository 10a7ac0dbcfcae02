import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

/** The sandbox's work that outlives a request (webhook deliveries, delayed transitions), stopped as one. */
export function createBackground(log: Logger) {
  const shutdown = new AbortController();
  // Every pending sleep and delivery listens on this one signal: hundreds at once under load are expected.
  setMaxListeners(0, shutdown.signal);
  const inflight = new Set<Promise<unknown>>();

  function track(work: Promise<unknown>): void {
    const p = work
      .catch((e: unknown) => {
        if (!shutdown.signal.aborted) log.error({ err: e }, 'sandbox background task failed');
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }

  return {
    /** Aborted on close: pending sleeps and fetches end. */
    signal: shutdown.signal,
    track,
    /** Sleeps `ms` (abandoned on close). */
    sleep: (ms: number) => sleep(ms, undefined, { signal: shutdown.signal }),
    /** Runs `fn` after `ms`, unless closed first. */
    later: (ms: number, fn: () => void) => track(sleep(ms, undefined, { signal: shutdown.signal }).then(fn)),
    /** How many deliveries / delayed transitions are pending now. */
    pending: () => inflight.size,
    /** Resolves once nothing is pending. */
    async idle(): Promise<void> {
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
    async close(): Promise<void> {
      shutdown.abort();
      await Promise.allSettled([...inflight]);
    },
  };
}
export type Background = ReturnType<typeof createBackground>;
