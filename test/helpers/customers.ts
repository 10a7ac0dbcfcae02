import type { Harness } from './harness.js';

/**
 * The one source of customer ids in tests. Each call gives an id no other caller in this test file gets,
 * so the per-customer hold limit never interferes unless a test reuses an id on purpose. Ids start above
 * the small fixed ids some tests use for named actors.
 */
let last = 100_000;
export const newCustomerId = (): number => ++last;

/** A fresh customer: id and bearer token. */
export function newCustomer(h: Harness): { id: number; token: string } {
  const id = newCustomerId();
  return { id, token: h.token(id, 'customer') };
}
