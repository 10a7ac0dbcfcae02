import type { Middleware, ParameterizedContext } from 'koa';
import type { Metrics } from '../metrics.js';
import type { ApiState } from '../context.js';

/** The matched route's template (`/bookings/:id`), never the raw path: ids would explode label sets. */
export const routeOf = (ctx: ParameterizedContext<ApiState>): string =>
  String((ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched');

/** Latency by route template and final status. */
export function httpMetrics(metrics: Metrics): Middleware<ApiState> {
  return async (ctx, next) => {
    const end = metrics.httpDuration.startTimer();
    try {
      await next();
    } finally {
      end({ method: ctx.method, route: routeOf(ctx), status: String(ctx.status) });
    }
  };
}
