import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { DomainError } from '../../shared/domain/errors.js';
import type { ApiState } from '../context.js';
import { BodyTooLargeError } from './errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Reads the raw body (kept for webhook signatures) and parses JSON; over 1 MiB is 413, bad JSON 400. */
export const body: Middleware<ApiState> = async (ctx, next) => {
  if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
  let raw: string;
  try {
    raw = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, encoding: 'utf8', length: ctx.get('content-length') || undefined });
  } catch (e) {
    const type = (e as { type?: string }).type;
    if (type === 'entity.too.large') {
      ctx.set('Connection', 'close');
      throw new BodyTooLargeError();
    }
    throw new DomainError('VALIDATION', 'request body could not be read', { field: 'body' });
  }
  ctx.state.rawBody = raw;
  // Not thrown here: the webhook must check its signature before judging the body.
  if (raw.trim() !== '') {
    if (jsonDepth(raw) > MAX_JSON_DEPTH) ctx.state.bodyInvalid = `request body is nested deeper than ${MAX_JSON_DEPTH} levels`;
    else {
      try {
        ctx.state.body = JSON.parse(raw);
      } catch {
        ctx.state.bodyInvalid = 'request body is not valid JSON';
      }
    }
  }
  await next();
};

/**
 * No request of this API nests beyond a few levels. A body nested thousands deep parses (V8's parser is not
 * recursive) but then overflows the stack of whatever walks it recursively (the Idempotency-Key's request hash
 * did: a 500), so it is refused before it is parsed.
 */
export const MAX_JSON_DEPTH = 32;

/** The deepest nesting of arrays and objects in JSON text (strings skipped), without parsing it. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** The parsed JSON body; 400 VALIDATION when it was not JSON (or nested too deeply). */
export function jsonBody(state: ApiState): unknown {
  if (state.bodyInvalid) throw new DomainError('VALIDATION', state.bodyInvalid, { field: 'body' });
  return state.body;
}
