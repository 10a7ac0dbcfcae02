import type { Middleware } from 'koa';
import type { ApiState } from '../context.js';
import { logger } from '../../shared/logger.js';
import { describeActor } from '../../shared/domain/actor.js';
import { routeOf } from './http-metrics.js';

// Probes and scrapes come every few seconds: their lines are debug, so info logs stay about the traffic.
const QUIET_ROUTES = new Set(['/health', '/ready', '/metrics']);

/**
 * The access lines' logger: the process's, without its redaction. A line is built below from fields that never
 * carry a secret (method, route template, path without its query, status, duration, the caller's description), and
 * the redaction's wildcard paths doubled the cost of a line (3 → 7 µs; a line per request at info).
 */
const accessLogger = logger.child({}, { redact: [] });

/**
 * One line per request, once its status is final: route template, path, status, duration, the caller, and
 * (from the logger's mixin) the process and request id. 5xx are errors, other lines info (probes debug).
 */
export const accessLog: Middleware<ApiState> = async (ctx, next) => {
  const started = performance.now();
  try {
    await next();
  } finally {
    logAccess({
      method: ctx.method, route: routeOf(ctx), path: ctx.path, status: ctx.status, ms: Math.round((performance.now() - started) * 10) / 10,
      ...(ctx.state.actor ? { actor: describeActor(ctx.state.actor) } : {}),
    });
  }
};

/** A request's access line (`requestId` given when the line is written outside the request's correlation). */
export interface AccessLine {
  method: string;
  route: string;
  path: string;
  status: number;
  ms: number;
  actor?: string;
  requestId?: string;
}

/** Writes the line: 5xx are errors, probes debug, the rest info. */
export function logAccess(line: AccessLine): void {
  const level = line.status >= 500 ? 'error' : QUIET_ROUTES.has(line.route) ? 'debug' : 'info';
  accessLogger[level](line, 'request');
}
