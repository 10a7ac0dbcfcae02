import Koa from 'koa';
import type { RequestListener } from 'node:http';
import type Router from '@koa/router';
import type { ApiDeps, ApiState, RouteDeps } from './context.js';
import type { Operation } from './openapi/operation.js';
import { redisSearchCache } from './search-cache.js';
import { withFastReads } from './fast-reads.js';
import { replicaLagBudget } from '../shared/config.js';
import { requestId } from './middleware/request-id.js';
import { errors } from './middleware/errors.js';
import { body } from './middleware/body.js';
import { httpMetrics } from './middleware/http-metrics.js';
import { accessLog } from './middleware/access-log.js';
import { healthOperations, healthRoutes } from './routes/health.js';
import { docsOperations, docsRoutes } from './routes/docs.js';
import { carOperations, carRoutes } from './routes/cars.js';
import { bookingOperations, bookingRoutes } from './routes/bookings.js';
import { timelineOperations, timelineRoutes } from './routes/timeline.js';
import { paymentOperations, paymentRoutes } from './routes/payments.js';
import { hotelOperations, hotelRoutes } from './routes/hotels.js';
import { rateOperations, rateRoutes } from './routes/rates.js';

/** A route module: its router, and the description of each of its operations for the OpenAPI document. */
export interface RouteModule {
  routes: (deps: RouteDeps) => Router<ApiState>;
  operations: readonly Operation[];
}

// Adding a route module is one line here (its routes and its operations); test/unit/openapi.test.ts
// fails when a router has a route the document lacks, or the reverse.
export const ROUTE_MODULES: readonly RouteModule[] = [
  { routes: healthRoutes, operations: healthOperations },
  { routes: (deps) => docsRoutes(deps, allOperations()), operations: docsOperations },
  { routes: carRoutes, operations: carOperations },
  { routes: bookingRoutes, operations: bookingOperations },
  { routes: timelineRoutes, operations: timelineOperations },
  { routes: paymentRoutes, operations: paymentOperations },
  { routes: hotelRoutes, operations: hotelOperations },
  { routes: rateRoutes, operations: rateOperations },
];

export const allOperations = (): Operation[] => ROUTE_MODULES.flatMap((m) => m.operations);

export function createApp(deps: ApiDeps, outer: Koa.Middleware<ApiState>[] = []): Koa<ApiState> {
  const app = new Koa<ApiState>();
  app.proxy = true;
  for (const m of outer) app.use(m);
  app.use(requestId);
  app.use(accessLog);
  app.use(httpMetrics(deps.metrics));
  app.use(errors);
  app.use(body);
  // An answer read on the replica is already up to the lag budget old: cached, it lives that much less (config.ts).
  const cacheTtl = deps.config.SEARCH_CACHE_TTL_S - (deps.replica ? replicaLagBudget(deps.config) : 0);
  const routeDeps: RouteDeps = { ...deps, searchCache: redisSearchCache(deps.redis, deps.metrics, Math.max(0, cacheTtl)) };
  for (const { routes } of ROUTE_MODULES) app.use(routes(routeDeps).routes());
  // Errors are answered by the errors middleware; keep Koa from logging them twice.
  app.silent = true;
  return app;
}

/** The API's request listener: the Koa app, with the searches its index answers answered beside it (fast-reads.ts). */
export function createHandler(deps: ApiDeps, outer: Koa.Middleware<ApiState>[] = []): RequestListener {
  return withFastReads(deps, createApp(deps, outer).callback());
}
