import type { Context } from 'koa';
import type { ZodTypeAny, z } from 'zod';
import { DomainError } from '../shared/domain/errors.js';

// The one way the API reads a request header. Absent is undefined; present is its value, even when empty: a header
// given empty is as malformed as a bad value (CONTRACT.md "Conventions"), never the same as no header. Node has
// already dropped the spaces and tabs around the value, so a header of whitespace only arrives here as ''.

/** The header's value as received, or undefined when the request has none (several are joined, as Node does). */
export function header(ctx: Pick<Context, 'req'>, name: string): string | undefined {
  const v = ctx.req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The header parsed with `schema` (which sees undefined when it is absent); 400 VALIDATION naming the header else. */
export function parseHeader<T extends ZodTypeAny>(ctx: Pick<Context, 'req'>, name: string, schema: T): z.infer<T> {
  const r = schema.safeParse(header(ctx, name));
  if (r.success) return r.data;
  const message = r.error.issues[0]!.message;
  throw new DomainError('VALIDATION', `${name}: ${message}`, { field: name, issues: [{ field: name, message }] });
}
