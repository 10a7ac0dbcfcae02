import Router from '@koa/router';
import type { ApiState, RouteDeps } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { parse, pathId } from '../validation.js';
import { calendarBody, calendarQuery, quoteBody, ratePlanBody } from '../schemas/rates.js';
import { createRatePlan, getCalendar, setCalendar } from '../../shared/usecases/rates.js';
import { createQuote, getQuote } from '../../shared/usecases/quotes.js';

/** Rate plans and their nightly calendar (operators), quotes (customers). */
export function rateRoutes(deps: RouteDeps) {
  const router = new Router<ApiState>();
  // Roles are checked before the input, as on every route.
  const operator = authenticate(deps.config.JWT_SECRET, ['operator']);
  const customer = authenticate(deps.config.JWT_SECRET, ['customer']);

  router.post('/room-types/:id/rate-plans', operator, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    const input = parse(ratePlanBody, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createRatePlan(deps, actorOf(ctx.state), roomTypeId, input);
  });
  router.put('/rate-plans/:id/calendar', operator, async (ctx) => {
    const ratePlanId = pathId(ctx.params.id, 'rate plan');
    ctx.body = await setCalendar(deps, actorOf(ctx.state), ratePlanId, parse(calendarBody, jsonBody(ctx.state), 'body'));
  });
  router.get('/rate-plans/:id/calendar', operator, async (ctx) => {
    const ratePlanId = pathId(ctx.params.id, 'rate plan');
    ctx.body = await getCalendar(deps, actorOf(ctx.state), ratePlanId, parse(calendarQuery, ctx.query, 'query'));
  });
  router.post('/quotes', customer, async (ctx) => {
    ctx.body = await createQuote(deps, actorOf(ctx.state), parse(quoteBody, jsonBody(ctx.state), 'body'));
  });
  router.get('/quotes/:id', customer, async (ctx) => {
    ctx.body = await getQuote(deps, actorOf(ctx.state), pathId(ctx.params.id, 'quote'));
  });
  return router;
}
