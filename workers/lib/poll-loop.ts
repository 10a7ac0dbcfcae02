import { logger } from '../../shared/logger.js';

export interface PollOptions {
  /** After a pass that found work: the next one this much later (the commits of that time make one batch). */
  busyMs: number;
  /** While idle the interval doubles from busyMs up to this: the latency of the first event after a quiet spell. */
  idleMaxMs: number;
}

/** What a pass reports: more waiting at once (a full batch), or some work done. */
export interface PassOutcome {
  full: boolean;
  worked: boolean;
}

/**
 * Runs `drain` in a loop: at once again after a full batch, `busyMs` later after one that found work, and
 * backing off to `idleMaxMs` while idle. Polling rather than LISTEN/NOTIFY: a NOTIFY per commit costs
 * PostgreSQL and the listener more at 600 commits/s (≈ 0.15 ms per event here) than 5 polls a second when
 * idle; a busy pump polls every `busyMs` anyway, so batches come out the same. `kick` runs a pass soon.
 */
export function drainByPolling(drain: () => Promise<PassOutcome>, o: PollOptions) {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let idleMs = o.busyMs;

  const schedule = (ms: number) => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(run, ms);
  };

  function run() {
    timer = null;
    if (stopped || running) return;
    running = (async () => {
      let next: number;
      try {
        const r = await drain();
        if (r.full) next = 0;
        else if (r.worked) next = idleMs = o.busyMs;
        else next = idleMs = Math.min(o.idleMaxMs, idleMs * 2);
      } catch (err) {
        logger.warn({ err: String(err) }, 'drain failed; retrying');
        next = 500;
      }
      running = null;
      schedule(next);
    })();
  }

  schedule(0);
  return {
    /** A pass soon (e.g. a sink just came back). */
    kick: () => {
      idleMs = o.busyMs;
      if (!running) schedule(0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
