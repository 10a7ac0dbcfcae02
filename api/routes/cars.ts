import Router from '@koa/router';
import { z } from 'zod';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { currency, id, instant, money, parse, queryInt, text } from '../validation.js';
import { createCar } from '../../shared/usecases/catalogue.js';
import { searchAvailableCars, type CarRow } from '../../shared/db/cars.js';
import { MAX_CAR_SPAN_MS } from '../../shared/domain/booking.js';
import { cachedSearch } from '../search-cache.js';

const newCar = z.object({
  plate: text(20),
  model: text(100),
  city: text(50),
  dailyPrice: money,
  depositAmount: money,
  currency: currency.default('VND'),
  turnaroundMinutes: z.number().int().min(0).max(10080).default(120),
  hostId: id.optional(),
});

const search = z
  .object({ city: text(50), from: instant, to: instant, limit: queryInt(50, 1, 200) })
  .refine((q) => q.from < q.to, { path: ['to'], message: 'to must be after from' })
  .refine((q) => q.to.getTime() - q.from.getTime() <= MAX_CAR_SPAN_MS, { path: ['to'], message: 'span at most 30 days' });

const publicCar = ({ hostId: _h, turnaroundMinutes: _t, ...c }: CarRow) => c;

export function carRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.post('/cars', authenticate(deps.config.JWT_SECRET, ['host', 'operator']), async (ctx) => {
    const input = parse(newCar, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createCar(deps, actorOf(ctx.state), input);
  });
  router.get('/cars', async (ctx) => {
    const q = parse(search, ctx.query, 'query');
    // Listed means "a hold for [from, to) would be accepted now", and no hold starts in the past.
    if (q.from.getTime() <= deps.clock.now().getTime()) {
      ctx.body = { cars: [] };
      return;
    }
    const key = `${q.city}|${q.from.toISOString()}|${q.to.toISOString()}|${q.limit}`;
    const cars = await cachedSearch(deps.redis, deps.metrics, 'cars', key, deps.config.SEARCH_CACHE_TTL_S, async () =>
      (await searchAvailableCars(deps.db, q)).map(publicCar));
    ctx.body = { cars };
  });
  return router;
}
