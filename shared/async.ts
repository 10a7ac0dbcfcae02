/** Rejects with "<what> took over <ms> ms" when `p` has not settled in time; the timer never outlives it. */
export function withTimeout<T>(p: Promise<T>, ms: number, what = 'operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** `p`'s value, or null when it fails or takes over `ms` (for best-effort reads such as gauges). */
export const valueWithin = <T>(p: Promise<T>, ms: number): Promise<T | null> => withTimeout(p, ms).catch(() => null);
