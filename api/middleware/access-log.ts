import type { Middleware } from 'koa';
import type { ApiState } from '../context.js';
import { logger } from '../../shared/logger.js';
import { describeActor } from '../../shared/domain/actor.js';
import { routeOf } from './http-metrics.js';

// Probes and scrapes come every few seconds: their lines are debug, so info logs stay about the traffic.
const QUIET_ROUTES = new Set(['/health', '/ready', '/metrics']);

/**
 * One line per request, once its status is final: route template, path, status, duration, the caller, and
 * (from the logger's mixin) the process and request id. 5xx are errors, other lines info (probes debug).
 */
export const accessLog: Middleware<ApiState> = async (ctx, next) => {
  const started = performance.now();
  try {
    await next();
  } finally {
    const route = routeOf(ctx);
    const line = {
      method: ctx.method, route, path: ctx.path, status: ctx.status, ms: Math.round((performance.now() - started) * 10) / 10,
      ...(ctx.state.actor ? { actor: describeActor(ctx.state.actor) } : {}),
    };
    const level = ctx.status >= 500 ? 'error' : QUIET_ROUTES.has(route) ? 'debug' : 'info';
    logger[level](line, 'request');
  }
};
