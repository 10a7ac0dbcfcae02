import { z } from 'zod';
import { currency, deposit, fastInstant, fastQueryInt, fastText, id, instant, isObject, money, queryInt, text } from './common.js';

/** POST /cars */
export const createCarBody = z.object({
  plate: text(20),
  model: text(100),
  city: text(50),
  dailyPrice: money,
  depositAmount: deposit,
  currency: currency.default('VND'),
  turnaroundMinutes: z.number().int().min(0).max(10080).default(120),
  hostId: id.optional(),
});

/** GET /cars (from < to and the 30-day span are checked by the search use case) */
export const carSearchQuery = z.object({ city: text(50), from: instant, to: instant, limit: queryInt(50, 1, 200) });
/** carSearchQuery's answer without zod (common.ts, "Fast paths"), or null. */
export function fastCarSearchQuery(q: unknown): z.infer<typeof carSearchQuery> | null {
  if (!isObject(q)) return null;
  const city = fastText(q.city, 50);
  const from = fastInstant(q.from);
  const to = fastInstant(q.to);
  const limit = fastQueryInt(q.limit, 50, 1, 200);
  return city === null || from === null || to === null || limit === null ? null : { city, from, to, limit };
}

/** A car as created (201). */
export const carAnswer = z.object({
  id, hostId: id, plate: z.string(), model: z.string(), city: z.string(), dailyPrice: money, depositAmount: money,
  currency: z.string(), turnaroundMinutes: z.number().int(),
}).strict();
/** GET /cars: cheapest first, then id. */
export const carSearchAnswer = z.object({ cars: z.array(carAnswer.omit({ hostId: true, turnaroundMinutes: true })) }).strict();
