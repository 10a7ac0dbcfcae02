import { z, type ZodTypeAny } from 'zod';
import { DomainError, notFound } from '../shared/domain/errors.js';
import { parseIdText } from '../shared/domain/ids.js';

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
  const id = parseIdText(raw);
  if (id === null) throw notFound(what);
  return id;
}
