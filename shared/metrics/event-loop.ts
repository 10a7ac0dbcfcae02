import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import type { Logger } from 'pino';

/**
 * Watches this process's event loop: every second, when the longest delay of that second passed `thresholdMs`, one
 * warning "event loop held" with the delay (max, p99) and the garbage collector's pauses in that second. A stall
 * holds every request of the process at once, which a latency percentile shows only as a tail without a cause;
 * bench:peak counts these lines per phase. Costs a 10 ms timer of libuv's own (monitorEventLoopDelay).
 */
export function watchEventLoop(log: Logger, thresholdMs = 50): () => void {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let gcMs = 0;
  let gcMaxMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcMaxMs = Math.max(gcMaxMs, e.duration);
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  const timer = setInterval(() => {
    const maxMs = h.max / 1e6;
    if (h.count > 0 && maxMs > thresholdMs) {
      log.warn({ maxMs: Math.round(maxMs), p99Ms: Math.round(h.percentile(99) / 1e6), gcMs: Math.round(gcMs), gcMaxMs: Math.round(gcMaxMs) }, 'event loop held');
    }
    h.reset();
    gcMs = 0;
    gcMaxMs = 0;
  }, 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    h.disable();
    gc.disconnect();
  };
}
