// The one retry backoff of the code base: jobs (BullMQ's backoff strategy and the obligations' next attempts),
// the Kafka publisher's reconnects, the `npm start` supervisor's restarts and the payment re-checks all use it.

export interface Backoff {
  /** The wait after the first failure. */
  baseMs: number;
  /** The longest wait (the contract caps job retries at 1 h). */
  capMs: number;
}

/** The wait before attempt `n + 1` after `n` failures (n ≥ 1): baseMs, doubling, at most capMs. */
export function backoffMs(failures: number, b: Backoff): number {
  const n = Math.max(1, Math.floor(failures));
  // 2^40 is far beyond any cap; it keeps the product finite.
  return Math.min(b.capMs, b.baseMs * 2 ** Math.min(40, n - 1));
}

/** Job retries: 1 s, 2 s, 4 s … capped at 1 h (the contract's cap). */
export const JOB_RETRY: Backoff = { baseMs: 1000, capMs: 3_600_000 };
