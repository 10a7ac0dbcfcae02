import Koa from 'koa';
import type { ApiDeps, ApiState, RouteDeps } from './context.js';
import { redisSearchCache } from './search-cache.js';
import { requestId } from './middleware/request-id.js';
import { errors } from './middleware/errors.js';
import { body } from './middleware/body.js';
import { httpMetrics } from './middleware/http-metrics.js';
import { healthRoutes } from './routes/health.js';
import { carRoutes } from './routes/cars.js';
import { bookingRoutes } from './routes/bookings.js';
import { paymentRoutes } from './routes/payments.js';
import { hotelRoutes } from './routes/hotels.js';
import { openapiRoutes } from './routes/openapi.js';
import { rateRoutes } from './routes/rates.js';

export function createApp(deps: ApiDeps, outer: Koa.Middleware<ApiState>[] = []): Koa<ApiState> {
  const app = new Koa<ApiState>();
  app.proxy = true;
  for (const m of outer) app.use(m);
  app.use(requestId);
  app.use(httpMetrics(deps.metrics));
  app.use(errors);
  app.use(body);
  const routeDeps: RouteDeps = { ...deps, searchCache: redisSearchCache(deps.redis, deps.metrics, deps.config.SEARCH_CACHE_TTL_S) };
  for (const routes of [healthRoutes, openapiRoutes, carRoutes, bookingRoutes, paymentRoutes, hotelRoutes, rateRoutes]) {
    const router = routes(routeDeps);
    app.use(router.routes());
  }
  // Errors are answered by the errors middleware; keep Koa from logging them twice.
  app.silent = true;
  return app;
}
