import Router from '@koa/router';
import type { ApiState, RouteDeps } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { parse, pathId } from '../validation.js';
import { calendarAnswer, calendarBody, calendarQuery, quoteAnswer, quoteBody, ratePlanAnswer, ratePlanBody } from '../schemas/rates.js';
import type { Operation } from '../openapi/operation.js';
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

const operator = ['operator'] as const;
const RANGE = 'Nights [from, to), at most 366.';

export const rateOperations: Operation[] = [
  {
    operationId: 'createRatePlan', method: 'post', path: '/room-types/{roomTypeId}/rate-plans', tag: 'prices', auth: operator,
    summary: 'Create a rate plan', description: "In the room type's currency.",
    body: ratePlanBody, example: { name: 'Flexible' },
    answer: { status: 201, description: 'The rate plan', schema: ratePlanAnswer },
  },
  {
    operationId: 'setCalendar', method: 'put', path: '/rate-plans/{ratePlanId}/calendar', tag: 'prices', auth: operator,
    summary: 'Set price and restrictions on every night of a range',
    description: `${RANGE} Sets the fields given (at least one) on every night, all or none; unknown fields are refused.`,
    body: calendarBody, example: { from: '2030-01-01', to: '2030-01-08', reason: 'winter prices', price: 900000, minStay: 2 },
    answer: { status: 200, description: 'The nights after the change', schema: calendarAnswer },
  },
  {
    operationId: 'getCalendar', method: 'get', path: '/rate-plans/{ratePlanId}/calendar', tag: 'prices', auth: operator,
    summary: 'Read the nightly calendar of a range',
    description: `${RANGE} A night never priced has price null; defaults: minStay 1, maxStay 30, the flags false.`,
    query: calendarQuery,
    answer: { status: 200, description: 'Each night of the range', schema: calendarAnswer },
  },
  {
    operationId: 'createQuote', method: 'post', path: '/quotes', tag: 'prices', auth: ['customer'],
    summary: 'Price a stay on a rate plan',
    description: 'Reserves nothing; valid for QUOTE_TTL_S. Restrictions are checked in the contract\'s order (`details.reason`, `details.date`); '
      + 'a rate plan of another room type or more guests than maxGuests × rooms is 400.',
    body: quoteBody, example: { roomTypeId: 1, ratePlanId: 1, checkIn: '2030-01-02', checkOut: '2030-01-04', rooms: 1, guests: 2 },
    answer: { status: 200, description: 'The quote', schema: quoteAnswer },
    errors: ['NOT_FOUND', 'SOLD_OUT', 'STAY_RESTRICTED'],
  },
  {
    operationId: 'getQuote', method: 'get', path: '/quotes/{quoteId}', tag: 'prices', auth: ['customer'],
    summary: 'Read one of your quotes', description: "Another customer's quote is 404.",
    answer: { status: 200, description: 'The quote', schema: quoteAnswer },
  },
];
