import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { holdRateLimiter } from '../hold-rate-limiter.js';
import { parse, pathId } from '../validation.js';
import { parseHeader } from '../headers.js';
import { isObject } from '../schemas/common.js';
import { z } from 'zod';
import {
  bookingAnswer, cancelAnswer, cancelBody, carHoldBody, changeAnswer, changeBody, fastCarHoldBody, holdAnswer, holdBodyObject, idempotencyKeyHeader, stayHoldBody,
  tripAnswer,
} from '../schemas/bookings.js';
import type { Operation } from '../openapi/operation.js';
import { advanceTrip, cancelBooking, getBooking } from '../../shared/usecases/bookings.js';
import { placeHold, type HoldDeps, type HoldInput } from '../../shared/usecases/holds.js';
import { refusalError } from '../../shared/usecases/idempotency.js';
import { startPayment } from '../../shared/usecases/payments.js';
import { changeBooking } from '../../shared/usecases/changes.js';

function holdInput(body: unknown): HoldInput {
  const car = isObject(body) && !('roomTypeId' in body) ? fastCarHoldBody(body) : null;
  if (car) return { kind: 'car', ...car };
  const obj = parse(holdBodyObject, body, 'body');
  if ('roomTypeId' in obj) return { kind: 'stay', ...parse(stayHoldBody, obj, 'body') };
  return { kind: 'car', ...parse(carHoldBody, obj, 'body') };
}

export function bookingRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  const holdDeps: HoldDeps = {
    ...deps,
    holdLimiter: deps.holdLimiter ?? holdRateLimiter(deps),
    onHoldAttempt: (kind, outcome) => deps.metrics.bookings.inc({ kind, outcome }),
  };
  const auth = authenticate(deps.config.JWT_SECRET);

  router.post('/bookings', authenticate(deps.config.JWT_SECRET, ['customer']), async (ctx) => {
    const input = holdInput(jsonBody(ctx.state));
    const idempotencyKey = parseHeader(ctx, 'Idempotency-Key', idempotencyKeyHeader);
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

  router.post('/bookings/:id/change', auth, async (ctx) => {
    const raw = jsonBody(ctx.state);
    const request = parse(changeBody, raw, 'body');
    const idempotencyKey = parseHeader(ctx, 'Idempotency-Key', idempotencyKeyHeader);
    const { outcome, replayed } = await changeBooking(deps, actorOf(ctx.state), pathId(ctx.params.id, 'booking'), request, { idempotencyKey, body: raw });
    if (replayed) ctx.set('Idempotent-Replayed', 'true');
    if (!outcome.ok) throw refusalError(outcome.error);
    ctx.body = outcome.value;
  });

  for (const action of ['pickup', 'return'] as const) {
    router.post(`/bookings/:id/${action}`, authenticate(deps.config.JWT_SECRET, ['host', 'operator']), async (ctx) => {
      ctx.body = await advanceTrip(deps, actorOf(ctx.state), pathId(ctx.params.id, 'booking'), action);
    });
  }
  return router;
}

const anyRole = ['customer', 'host', 'operator'] as const;
const hostOrOperator = ['host', 'operator'] as const;

export const bookingOperations: Operation[] = [
  {
    operationId: 'holdBooking', method: 'post', path: '/bookings', tag: 'bookings', auth: ['customer'],
    summary: 'Hold a car or a stay',
    description: 'Car: `{carId, from, to}`, from in the future, from < to, at most 30 days; the car is blocked for '
      + '[from, to + turnaroundMinutes). Stay: `{roomTypeId, checkIn, checkOut, rooms?, guests?, ratePlanId?, quoteId?}`, 1 to 30 nights, '
      + 'all held or none; with a rate plan, its restrictions and prices are checked under the hold\'s locks (totalAmount); with a quote, '
      + 'the quote must be yours, match the body, be valid and still have the current total. '
      + 'The hold lasts HOLD_TTL_S. With an Idempotency-Key, a replay of the same body answers the first status and body '
      + 'with `Idempotent-Replayed: true` and creates nothing. At most HOLD_RATE_LIMIT new holds per HOLD_RATE_WINDOW_S.',
    headers: z.object({ 'Idempotency-Key': idempotencyKeyHeader.describe('1–255 characters, scoped to you, kept at least 24 h') }),
    body: z.union([carHoldBody, stayHoldBody]),
    example: { carId: 1, from: '2030-01-01T10:00:00+07:00', to: '2030-01-02T10:00:00+07:00' },
    answer: {
      status: 201, description: 'The hold; pay its deposit at `paymentUrl` before `holdExpiresAt`', schema: holdAnswer,
      headers: { 'Idempotent-Replayed': { description: '`true` when this is the replay of an earlier request with the same key', schema: { type: 'string', enum: ['true'] }, required: false } },
    },
    errors: ['NOT_FOUND', 'CAR_UNAVAILABLE', 'SOLD_OUT', 'STAY_RESTRICTED', 'PRICE_CHANGED', 'QUOTE_EXPIRED', 'IDEMPOTENCY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_REUSED', 'RATE_LIMITED'],
  },
  {
    operationId: 'getBooking', method: 'get', path: '/bookings/{id}', tag: 'bookings', auth: anyRole,
    summary: 'Read a booking', description: "The owner, the car's host or an operator; anyone else gets 404.",
    answer: { status: 200, description: 'The booking, with its payment and latest refund', schema: bookingAnswer },
  },
  {
    operationId: 'payBooking', method: 'get', path: '/bookings/{id}/pay', tag: 'bookings', auth: ['customer'],
    summary: "Redirect to the provider's checkout",
    description: 'The owner only. Creates the payment intent on the first call, reuses it after. 503 when the provider does not answer.',
    answer: {
      status: 303, description: "See Other: the provider's checkout page",
      headers: { Location: { description: "The provider's checkout URL", schema: { type: 'string', format: 'uri' } } },
    },
    errors: ['INVALID_STATE'],
  },
  {
    operationId: 'cancelBooking', method: 'post', path: '/bookings/{id}/cancel', tag: 'bookings', auth: anyRole,
    summary: 'Cancel a hold or a confirmed booking',
    description: 'Owner cancelling CONFIRMED: 100 % of the deposit ≥ 72 h before pickup, 50 % ≥ 24 h, else 0; the car\'s host or an '
      + 'operator: 100 %; HOLD: 0. The refund is paid asynchronously.',
    body: cancelBody, example: { reason: 'plans changed' },
    answer: { status: 200, description: 'Cancelled, with the refund owed', schema: cancelAnswer },
    errors: ['INVALID_STATE'],
  },
  {
    operationId: 'changeBooking', method: 'post', path: '/bookings/{id}/change', tag: 'bookings', auth: anyRole,
    summary: 'Change a booking: extend, shorten, move, swap the car or room type, add or drop rooms',
    description: "The owner, the car's host or an operator (stays: the owner or an operator). Car: `{from?, to?, carId?}`; stay: "
      + '`{checkIn?, checkOut?, rooms?, guests?, roomTypeId?, ratePlanId?, quoteId?}`; the fields given replace the booking\'s and the '
      + 'result obeys every rule of a new hold. HOLD and CONFIRMED may change anything, ON_TRIP only its return (`to`, a stay\'s '
      + '`checkOut`). Atomic: what the new terms need is taken under the constraints that decide a hold, in the transaction that frees '
      + 'what they no longer need; time and nights both share are never free. totalAmount and depositAmount are recomputed. HOLD: '
      + 'holdExpiresAt does not move; a new deposit cancels the old intents and the next /pay pays the new amount. CONFIRMED: a lower '
      + 'deposit refunds the difference, a higher one is 409 DEPOSIT_INCREASE. Idempotency-Key as for holds.',
    headers: z.object({ 'Idempotency-Key': idempotencyKeyHeader.describe('1–255 characters, scoped to you, kept at least 24 h') }),
    body: changeBody,
    example: { to: '2030-01-03T10:00:00+07:00' },
    answer: {
      status: 200, description: 'The booking as it is now, and `change: {before, after, depositDelta}`', schema: changeAnswer,
      headers: { 'Idempotent-Replayed': { description: '`true` when this is the replay of an earlier request with the same key', schema: { type: 'string', enum: ['true'] }, required: false } },
    },
    errors: ['INVALID_STATE', 'CAR_UNAVAILABLE', 'SOLD_OUT', 'STAY_RESTRICTED', 'PRICE_CHANGED', 'QUOTE_EXPIRED', 'DEPOSIT_INCREASE',
      'IDEMPOTENCY_IN_PROGRESS', 'IDEMPOTENCY_KEY_REUSED'],
  },
  ...(['pickup', 'return'] as const).map((action): Operation => ({
    operationId: `${action}Booking`, method: 'post', path: `/bookings/{id}/${action}`, tag: 'bookings', auth: hostOrOperator,
    summary: action === 'pickup' ? 'CONFIRMED → ON_TRIP' : 'ON_TRIP → COMPLETED',
    description: "The car's host or an operator (stays: operators).",
    answer: { status: 200, description: 'The new status', schema: tripAnswer },
    errors: ['INVALID_STATE'],
  })),
];
