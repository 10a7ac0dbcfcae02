import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { HoldRateLimiter } from '../hold-rate-limiter.js';
import { parse, pathId } from '../validation.js';
import { cancelBody, carHoldBody, holdBodyObject, idempotencyKeyHeader, stayHoldBody } from '../schemas/bookings.js';
import { advanceTrip, cancelBooking, getBooking } from '../../shared/usecases/bookings.js';
import { placeHold, type HoldDeps, type HoldInput } from '../../shared/usecases/holds.js';
import { refusalError } from '../../shared/usecases/idempotency.js';
import { startPayment } from '../../shared/usecases/payments.js';

function holdInput(body: unknown): HoldInput {
  const obj = parse(holdBodyObject, body, 'body');
  if ('roomTypeId' in obj) return { kind: 'stay', ...parse(stayHoldBody, obj, 'body') };
  return { kind: 'car', ...parse(carHoldBody, obj, 'body') };
}

export function bookingRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  const holdDeps: HoldDeps = {
    ...deps,
    holdLimiter: new HoldRateLimiter(deps.redis, deps.config.HOLD_RATE_LIMIT, deps.config.HOLD_RATE_WINDOW_S, () =>
      deps.metrics.rateLimiterFailOpen.inc()),
    onHoldAttempt: (kind, outcome) => deps.metrics.bookings.inc({ kind, outcome }),
  };
  const auth = authenticate(deps.config.JWT_SECRET);

  router.post('/bookings', authenticate(deps.config.JWT_SECRET, ['customer']), async (ctx) => {
    const input = holdInput(jsonBody(ctx.state));
    const idempotencyKey = parse(idempotencyKeyHeader, ctx.get('idempotency-key') || undefined, 'header');
    const { outcome, replayed } = await placeHold(holdDeps, actorOf(ctx.state), input, { idempotencyKey, body: jsonBody(ctx.state) });
    if (replayed) ctx.set('Idempotent-Replayed', 'true');
    if (!outcome.ok) throw refusalError(outcome.error); // the first answer's code, message and details
    ctx.status = 201;
    ctx.body = outcome.value;
  });

  router.get('/bookings/:id', auth, async (ctx) => {
    ctx.body = await getBooking(deps, actorOf(ctx.state), pathId(ctx.params.id, 'booking'));
  });

  router.get('/bookings/:id/pay', authenticate(deps.config.JWT_SECRET, ['customer']), async (ctx) => {
    const url = await startPayment(deps, actorOf(ctx.state), pathId(ctx.params.id, 'booking'));
    ctx.redirect(url);
    ctx.status = 303;
  });

  router.post('/bookings/:id/cancel', auth, async (ctx) => {
    const body = parse(cancelBody, jsonBody(ctx.state), 'body');
    ctx.body = await cancelBooking(deps, actorOf(ctx.state), pathId(ctx.params.id, 'booking'), body?.reason ?? null);
  });

  for (const action of ['pickup', 'return'] as const) {
    router.post(`/bookings/:id/${action}`, authenticate(deps.config.JWT_SECRET, ['host', 'operator']), async (ctx) => {
      ctx.body = await advanceTrip(deps, actorOf(ctx.state), pathId(ctx.params.id, 'booking'), action);
    });
  }
  return router;
}
