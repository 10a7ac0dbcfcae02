import type { Middleware } from 'koa';
import type { Metrics } from '../metrics.js';
import type { ApiState } from '../context.js';

/** Latency by route template (never the raw path: ids would explode the label set). */
export function httpMetrics(metrics: Metrics): Middleware<ApiState> {
  return async (ctx, next) => {
    const end = metrics.httpDuration.startTimer();
    try {
      await next();
    } finally {
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      end({ method: ctx.method, route: String(route), status: String(ctx.status) });
    }
  };
}
