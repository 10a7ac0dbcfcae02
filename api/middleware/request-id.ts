import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { ApiState } from '../context.js';
import { header } from '../headers.js';
import { traceparentFor, withCorrelation } from '../../shared/correlation.js';

// Any visible ASCII (spaces inside allowed) that is safe to echo in a header.
const acceptable = /^[\x21-\x7e](?:[\x20-\x7e]{0,198}[\x21-\x7e])?$/;

/** The caller's X-Request-Id when sane, else a new one. */
export const requestIdFor = (given: string | undefined): string => (given && acceptable.test(given) ? given : randomUUID());

/**
 * Echoes the caller's X-Request-Id (when sane), else mints one; every response carries it. The rest of the
 * request runs in its correlation (with the caller's W3C traceparent, or one derived from the id), so log
 * lines, outbox rows, jobs and Kafka headers written on its behalf carry the same id.
 */
export const requestId: Middleware<ApiState> = async (ctx, next) => {
  const id = requestIdFor(header(ctx, 'x-request-id'));
  ctx.state.requestId = id;
  ctx.set('X-Request-Id', id);
  // The traceparent is made when first asked for (an event, a job, a Kafka header): a search never asks.
  const incoming = header(ctx, 'traceparent');
  let traceparent: string | undefined;
  await withCorrelation({ requestId: id, get traceparent() { return (traceparent ??= traceparentFor(id, incoming)); } }, next);
};
