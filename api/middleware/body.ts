import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { DomainError } from '../../shared/domain/errors.js';
import type { ApiState } from '../context.js';
import { BodyTooLargeError } from './errors.js';
import { header } from '../headers.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Strict UTF-8: a byte sequence that is not UTF-8 is refused, not replaced by U+FFFD (which would make two different
 * bodies one text). A leading byte order mark is dropped (RFC 8259 §8.1 lets a parser ignore it).
 */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Reads the raw body and parses JSON; over 1 MiB is 413, bad JSON 400. The bytes are kept as received (the webhook's
 * signature covers them, not their decoding); the text is their strict UTF-8 decoding, BOM dropped.
 */
export const body: Middleware<ApiState> = async (ctx, next) => {
  if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
  let bytes: Buffer;
  try {
    bytes = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, length: header(ctx, 'content-length') });
  } catch (e) {
    const type = (e as { type?: string }).type;
    if (type === 'entity.too.large') {
      ctx.set('Connection', 'close');
      throw new BodyTooLargeError();
    }
    throw new DomainError('VALIDATION', 'request body could not be read', { field: 'body' });
  }
  ctx.state.rawBytes = bytes;
  let raw = '';
  try {
    raw = utf8.decode(bytes);
  } catch {
    // Not thrown here either: the webhook checks its signature over the bytes first.
    ctx.state.bodyInvalid = 'request body is not valid UTF-8';
  }
  ctx.state.rawBody = raw;
  // Not thrown here: the webhook must check its signature before judging the body.
  if (!ctx.state.bodyInvalid && raw.trim() !== '') {
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
