import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { parse, pathId } from '../validation.js';
import type { Operation } from '../openapi/operation.js';
import { timelineAnswer, timelineQuery } from '../schemas/timeline.js';
import { getTimeline } from '../../shared/usecases/timeline.js';

export function timelineRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.get('/bookings/:id/timeline', authenticate(deps.config.JWT_SECRET), async (ctx) => {
    const id = pathId(ctx.params.id, 'booking');
    ctx.body = await getTimeline(deps, actorOf(ctx.state), id, parse(timelineQuery, ctx.query, 'query'));
  });
  return router;
}

export const timelineOperations: Operation[] = [
  {
    operationId: 'getBookingTimeline', method: 'get', path: '/bookings/{id}/timeline', tag: 'bookings', auth: ['customer', 'host', 'operator'],
    summary: "A booking's story",
    description: "The owner, the car's host or an operator; anyone else gets 404. Everything recorded about the booking, oldest first "
      + '(by `at`, then kind): each event (`kind: "event"`, `type` the topic), each payment received, each refund with its attempts '
      + 'and last error, each intent cancellation owed, each notification sent or skipped (`type` the channel). Paged like the '
      + 'inventory audit: `limit` (≤ 1000) entries, then `nextCursor` until it is null; pages neither skip nor repeat an entry '
      + 'while new ones arrive. Kept as long as the booking.',
    query: timelineQuery,
    answer: { status: 200, description: 'A page of entries, oldest first', schema: timelineAnswer },
  },
];
