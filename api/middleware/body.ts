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
  if (raw.trim() !== '') {
    try {
      ctx.state.body = JSON.parse(raw);
    } catch {
      // Not thrown here: the webhook must check its signature before judging the body.
      ctx.state.bodyInvalid = true;
    }
  }
  await next();
};

/** The parsed JSON body; 400 VALIDATION when it was not JSON. */
export function jsonBody(state: ApiState): unknown {
  if (state.bodyInvalid) throw new DomainError('VALIDATION', 'request body is not valid JSON', { field: 'body' });
  return state.body;
}
