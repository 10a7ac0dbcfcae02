import Router from '@koa/router';
import type { ApiState, RouteDeps } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { sendAnswer } from '../answer.js';
import { parse } from '../validation.js';
import { carAnswer, carSearchAnswer, carSearchQuery, createCarBody, fastCarSearchQuery } from '../schemas/cars.js';
import type { Operation } from '../openapi/operation.js';
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
    sendAnswer(ctx, await searchCars(deps, fastCarSearchQuery(ctx.query) ?? parse(carSearchQuery, ctx.query, 'query')));
  });
  return router;
}

export const carOperations: Operation[] = [
  {
    operationId: 'createCar', method: 'post', path: '/cars', tag: 'catalogue', auth: ['host', 'operator'],
    summary: 'List a car',
    description: 'A host lists its own car (hostId, when given, must be its own); an operator must name the hostId.',
    body: createCarBody,
    example: { plate: '51A-123.45', model: 'VinFast VF8', city: 'HCM', dailyPrice: 1200000, depositAmount: 2000000 },
    answer: { status: 201, description: 'The car', schema: carAnswer },
    errors: ['ALREADY_EXISTS'],
  },
  {
    operationId: 'searchCars', method: 'get', path: '/cars', tag: 'search', auth: 'public',
    summary: 'Cars free for [from, to)',
    description: 'A car is listed when a hold for [from, to) would be accepted now (its turnaround buffer included). '
      + 'from < to, at most 30 days; `from` in the past lists nothing.',
    query: carSearchQuery,
    answer: { status: 200, description: 'Cheapest first, then id', schema: carSearchAnswer },
  },
];
