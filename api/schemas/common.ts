import { datetimeRegex, z } from 'zod';
import { MAX_MONEY, currencyCode } from '../../shared/domain/money.js';

// Building blocks of the request schemas. Shapes only: rules that span fields or need the clock (periods,
// nights, "not in the past") are the domain's, checked by the use cases.

export const id = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
/** Money in a request: an integer of minor units, at most MAX_MONEY (10^15), so every total derived from it stays exact. */
export const money = z.number().int().nonnegative().max(MAX_MONEY, `at most ${MAX_MONEY} minor units`);
/** A deposit the customer pays to hold: at least 1 minor unit (a deposit of 0 could never be paid, so never confirmed). */
export const deposit = z.number().int().min(1, 'at least 1: a deposit of 0 can never be paid').max(MAX_MONEY, `at most ${MAX_MONEY} minor units`);
/** ISO 4217, in any case (`vnd` is `VND`); kept and answered in upper case. */
export const currency = z.string().regex(/^[A-Za-z]{3}$/, 'an ISO 4217 code such as VND (any case)').transform(currencyCode)
  .describe('ISO 4217 code, three letters in any case (`vnd` is `VND`); stored and answered in upper case');
/**
 * Text a person typed: no control characters but tab and line breaks (PostgreSQL refuses NUL outright, and logs
 * and screens should not get the others), and well-formed Unicode (a lone surrogate would be stored as U+FFFD).
 */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const LONE_SURROGATE = /\p{Cs}/u;
export const isCleanText = (s: string) => !CONTROL.test(s) && !LONE_SURROGATE.test(s);
export const CLEAN_TEXT = 'no control characters or malformed Unicode';

// PostgreSQL has no year 0 (and JavaScript's Date has one): instants are refused outside years 1 to 9999.
const FIRST_INSTANT = Date.UTC(1, 0, 1) - 14 * 3_600_000;
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999) + 14 * 3_600_000;
/** Date.parse's reading of an instant the shape check passed: a real moment within years 1 to 9999. */
const isRealInstant = (s: string) => {
  const t = Date.parse(s);
  return !Number.isNaN(t) && t >= FIRST_INSTANT && t <= LAST_INSTANT;
};
const INSTANT_OPTIONS = { offset: true, local: false, precision: null } as const;
/** ISO-8601 instant that carries an offset (Z or ±hh:mm) and names a real moment (`+99:99` does not). */
export const instant = z
  .string()
  .datetime({ ...INSTANT_OPTIONS, message: 'an ISO-8601 instant with an offset' })
  .refine(isRealInstant, 'a real instant (offset within ±23:59, year 0001 to 9999)')
  .transform((s) => new Date(s));

// Fast paths of the schemas on the hot requests (a search's query, a car hold's body): the same checks in the same
// order, without zod's per-call work (its datetime check builds its regex on every parse; refinements and
// transforms allocate contexts): a car search query took ~30 µs in zod, a fifth of the request's CPU. Each answers
// exactly what its schema would, or null for "ask the schema" (which then also words the refusal).
// test/unit/fast-schemas.test.ts holds each to its schema on arbitrary input.

/** zod's own regex for `.datetime(INSTANT_OPTIONS)`, built once. */
const INSTANT_SHAPE = datetimeRegex(INSTANT_OPTIONS);
/** `instant`'s answer, or null. */
export const fastInstant = (v: unknown): Date | null => (typeof v === 'string' && INSTANT_SHAPE.test(v) && isRealInstant(v) ? new Date(v) : null);
/** `text(max)`'s answer, or null. */
export const fastText = (v: unknown, max: number): string | null => {
  if (typeof v !== 'string') return null;
  const t = v.trim();
  return t.length >= 1 && t.length <= max && isCleanText(t) ? t : null;
};
/** `isoDate`'s answer, or null. */
export const fastIsoDate = (v: unknown): string | null =>
  (typeof v === 'string' && ISO_DATE_SHAPE.test(v) && isRealDate(v) && v >= '0001-01-01' ? v : null);
/** `id`'s answer, or null. */
export const fastId = (v: unknown): number | null =>
  (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= Number.MAX_SAFE_INTEGER ? v : null);
/** `queryInt(def, min, max)`'s answer, or null: zod coerces with Number() too, so `' 7 '` and `['7']` are 7 there as here. */
export const fastQueryInt = (v: unknown, def: number, min: number, max: number): number | null => {
  if (v === undefined) return def;
  const n = Number(v);
  return Number.isInteger(n) && n >= min && n <= max ? n : null;
};
/** A value zod's z.object reads keys of (an object, not an array or null). */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const ISO_DATE_SHAPE = /^\d{4}-\d{2}-\d{2}$/;
/** A YYYY-MM-DD that names a day of the calendar (not 2030-02-30). */
const isRealDate = (s: string) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s);
export const isoDate = z
  .string()
  .regex(ISO_DATE_SHAPE, 'a date YYYY-MM-DD')
  .refine(isRealDate, 'a real calendar date')
  // Year 0000 parses in JavaScript but not in PostgreSQL (there is no year 0 AD).
  .refine((s) => s >= '0001-01-01', 'a date from 0001-01-01 on');
export const text = (max = 200) => z.string().trim().min(1).max(max).refine(isCleanText, CLEAN_TEXT);
/** Query integers arrive as strings. */
export const queryInt = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
/** Rooms of a stay (a hold or a quote). */
export const rooms = z.number().int().min(1).max(100).default(1);
/** Guests of a stay; at most maxGuests × rooms is the domain's rule. */
export const guests = z.number().int().min(1).max(10_000).default(1);

// Answers are described for the OpenAPI document only. They are strict, so a field an answer gains
// without its schema fails the test that checks live answers against the document.
export const instantOut = z.string().datetime({ offset: true });
export const dateOut = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
