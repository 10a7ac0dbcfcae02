import { z, type ZodTypeAny } from 'zod';
import { DomainError, notFound } from '../shared/domain/errors.js';

/** Parses with zod or throws 400 VALIDATION naming the first bad field. */
export function parse<T extends ZodTypeAny>(schema: T, value: unknown, where: 'body' | 'query' | 'header'): z.infer<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.path.length ? issue.path.join('.') : where;
  throw new DomainError('VALIDATION', `${field}: ${issue.message}`, {
    field,
    issues: r.error.issues.map((i) => ({ field: i.path.join('.') || where, message: i.message })),
  });
}

/** A path id that is not a positive integer names nothing: 404, as the contract asks. */
export function pathId(raw: string | undefined, what: string): number {
  if (!raw || !/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw notFound(what);
  return Number(raw);
}

export const id = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
export const money = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
export const currency = z.string().regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as VND');
/** ISO-8601 instant that carries an offset (Z or ±hh:mm). */
export const instant = z
  .string()
  .datetime({ offset: true, message: 'an ISO-8601 instant with an offset' })
  .transform((s) => new Date(s));
export const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'a date YYYY-MM-DD')
  .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s), 'a real calendar date');
export const text = (max = 200) => z.string().trim().min(1).max(max);
/** Query integers arrive as strings. */
export const queryInt = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
