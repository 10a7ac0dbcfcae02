import { ExponentialBackoff, TaskCancelledError, TimeoutStrategy, handleWhen, retry, timeout } from 'cockatiel';
import { ServerError, unlessStopped } from './unanswered.js';

// How the provider client tries a call: retries (outer) around a per-attempt timeout (inner) that aborts the attempt's
// fetch, and how long such a call can run at most.

/** How every process calls the provider (shared/runtime.ts): each attempt's timeout, the retries after it, the first backoff. */
export const PSP_CALLS = { timeoutMs: 2000, retries: 2, backoffInitialMs: 100 } as const;

/** Not cockatiel's isTaskCancelledError: in 3.2.1 it tests the wrong marker and is always false. */
export const isTimeout = (e: unknown) => e instanceof TaskCancelledError;

const MAX_BACKOFF_MS = 5_000;
const isTransient = (e: Error) =>
  e instanceof ServerError || isTimeout(e) || e instanceof TypeError; // fetch: TypeError on network failure

export interface AttemptPolicy {
  /** Runs `fn` under the policy; `gate` (a rate limit) is awaited before each attempt, outside its timeout: waiting for a slot is not the provider being slow. */
  execute<T>(fn: (c: { signal: AbortSignal }) => Promise<T>, gate?: () => Promise<void>, beforeSend?: () => Promise<void>): Promise<T>;
}

export function attemptPolicy(timeoutMs: number, retries: number, backoffInitialMs: number): AttemptPolicy {
  const outer = retry(handleWhen(isTransient), {
    maxAttempts: retries,
    backoff: new ExponentialBackoff({ initialDelay: backoffInitialMs, maxDelay: MAX_BACKOFF_MS }),
  });
  const inner = timeout(timeoutMs, TimeoutStrategy.Aggressive);
  return {
    execute: (fn, gate, beforeSend) => outer.execute(async () => {
      await gate?.();
      await unlessStopped(beforeSend);
      return inner.execute(fn);
    }),
  };
}

/**
 * A retrying call's longest run from its first send to its last: each attempt timed out, each backoff at its bound
 * (cockatiel's decorrelated jitter keeps the k-th under initialDelay × 2^(k+1)); gate waits aside.
 */
export const longestCallMs = (timeoutMs: number, retries: number, backoffInitialMs: number): number =>
  (retries + 1) * timeoutMs + Math.min(retries * MAX_BACKOFF_MS, backoffInitialMs * (2 ** (retries + 1) - 2));

/**
 * How late (s) the provider may still carry out a send its client gave up on: 2 × LEASE_S (shared/config.ts), plus the
 * client's longest call, since a send in doubt is timed from its call's start and the call's retries leave later.
 */
export const providerLatenessS = (leaseS: number, longestMs: number): number => 2 * leaseS + Math.ceil(longestMs / 1000);
