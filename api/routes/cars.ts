import Router from '@koa/router';
import type { ApiState, RouteDeps } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { parse } from '../validation.js';
import { carSearchQuery, createCarBody } from '../schemas/cars.js';
import { createCar } from '../../shared/usecases/catalogue.js';
import { searchCars } from '../../shared/usecases/search.js';

export function carRoutes(deps: RouteDeps) {
  const router = new Router<ApiState>();
  router.post('/cars', authenticate(deps.config.JWT_SECRET, ['host', 'operator']), async (ctx) => {
    const input = parse(createCarBody, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createCar(deps, actorOf(ctx.state), input);
  });
  router.get('/cars', async (ctx) => {
    ctx.body = await searchCars(deps, parse(carSearchQuery, ctx.query, 'query'));
  });
  return router;
}
