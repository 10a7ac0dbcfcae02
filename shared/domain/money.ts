import { validation } from './errors.js';

/**
 * The most money in minor units any amount or derived total may be (CONTRACT.md "Conventions"): 10^15, well below
 * 2^53, so every amount, and the sum of a few, is an exact JavaScript integer. Migration 018 holds the database to it.
 */
export const MAX_MONEY = 1_000_000_000_000_000;

/** A derived total (price × days, deposit × rooms, Σ nights): itself, or 400 VALIDATION on `field` beyond MAX_MONEY. */
export function boundedTotal(total: number, field: string, what: string): number {
  if (!Number.isSafeInteger(total) || total > MAX_MONEY) {
    throw validation(field, `${what} would exceed ${MAX_MONEY} minor units`);
  }
  return total;
}

/** ISO 4217 codes compare without regard to case (`vnd` is `VND`): a provider such as Stripe sends lower case. */
export const sameCurrency = (a: string, b: string): boolean => a.toUpperCase() === b.toUpperCase();

/** A currency code as answers and the database carry it: upper case. */
export const currencyCode = (c: string): string => c.toUpperCase();
