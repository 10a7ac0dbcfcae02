import Router from '@koa/router';
import type { ApiState, RouteDeps } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { sendAnswer } from '../answer.js';
import { parse, pathId } from '../validation.js';
import {
  adjustInventoryBody, auditAnswer, auditQuery, availabilityAnswer, availabilityQuery, createHotelBody, createRoomTypeBody, hotelAnswer,
  nightRangeQuery, nightsAnswer, roomTypeAnswer,
} from '../schemas/hotels.js';
import type { Operation } from '../openapi/operation.js';
import { createHotel, createRoomType } from '../../shared/usecases/catalogue.js';
import { adjustInventory, getInventory, getInventoryAudit } from '../../shared/usecases/inventory.js';
import { searchStays } from '../../shared/usecases/search.js';

export function hotelRoutes(deps: RouteDeps) {
  const router = new Router<ApiState>();
  // Role is checked before the input, so a customer learns nothing about the operator API's shape.
  const auth = authenticate(deps.config.JWT_SECRET, ['operator']);

  router.get('/hotels/availability', async (ctx) => {
    sendAnswer(ctx, await searchStays(deps, parse(availabilityQuery, ctx.query, 'query')));
  });
  router.post('/hotels', auth, async (ctx) => {
    const input = parse(createHotelBody, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createHotel(deps, actorOf(ctx.state), input);
  });
  router.post('/hotels/:hotelId/room-types', auth, async (ctx) => {
    const hotelId = pathId(ctx.params.hotelId, 'hotel');
    const input = parse(createRoomTypeBody, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createRoomType(deps, actorOf(ctx.state), { ...input, hotelId });
  });
  router.put('/room-types/:id/inventory', auth, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    const input = parse(adjustInventoryBody, jsonBody(ctx.state), 'body');
    ctx.body = await adjustInventory(deps, actorOf(ctx.state), roomTypeId, input);
  });
  router.get('/room-types/:id/inventory', auth, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    ctx.body = await getInventory(deps, actorOf(ctx.state), roomTypeId, parse(nightRangeQuery, ctx.query, 'query'));
  });
  router.get('/room-types/:id/inventory/audit', auth, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    ctx.body = await getInventoryAudit(deps, actorOf(ctx.state), roomTypeId, parse(auditQuery, ctx.query, 'query'));
  });
  return router;
}

const operator = ['operator'] as const;
const RANGE = 'Nights [from, to), at most 366.';

export const hotelOperations: Operation[] = [
  {
    operationId: 'searchStays', method: 'get', path: '/hotels/availability', tag: 'search', auth: 'public',
    summary: 'Room types with free rooms on every night',
    description: '1 to 30 nights [checkIn, checkOut); at most 200 room types, most free rooms first.',
    query: availabilityQuery,
    answer: { status: 200, description: 'Room types with at least `rooms` free on every night', schema: availabilityAnswer },
  },
  {
    operationId: 'createHotel', method: 'post', path: '/hotels', tag: 'catalogue', auth: operator,
    summary: 'Create a hotel', description: '`timezone` is an IANA zone name; hotel dates are in it.',
    body: createHotelBody, example: { name: 'Riverside', city: 'HCM', timezone: 'Asia/Ho_Chi_Minh' },
    answer: { status: 201, description: 'The hotel', schema: hotelAnswer },
  },
  {
    operationId: 'createRoomType', method: 'post', path: '/hotels/{hotelId}/room-types', tag: 'catalogue', auth: operator,
    summary: 'Create a room type of a hotel',
    body: createRoomTypeBody, example: { name: 'Double', depositAmount: 500000 },
    answer: { status: 201, description: 'The room type', schema: roomTypeAnswer },
  },
  {
    operationId: 'setInventory', method: 'put', path: '/room-types/{roomTypeId}/inventory', tag: 'inventory', auth: operator,
    summary: 'Set sellable rooms on every night of a range',
    description: `${RANGE} All nights or none; refused when sellable would drop below held + confirmed.`,
    body: adjustInventoryBody, example: { from: '2030-01-01', to: '2030-01-08', sellable: 10, reason: 'opening' },
    answer: { status: 200, description: 'The nights after the change', schema: nightsAnswer },
    errors: ['INVENTORY_BELOW_COMMITTED'],
  },
  {
    operationId: 'getInventory', method: 'get', path: '/room-types/{roomTypeId}/inventory', tag: 'inventory', auth: operator,
    summary: 'Read the nights of a range', description: RANGE,
    query: nightRangeQuery,
    answer: { status: 200, description: 'Each night with its counts', schema: nightsAnswer },
  },
  {
    operationId: 'getInventoryAudit', method: 'get', path: '/room-types/{roomTypeId}/inventory/audit', tag: 'inventory', auth: operator,
    summary: 'The inventory ledger of a range',
    description: `${RANGE} Every change of any count (hold, confirm, release, adjustment); entries are never updated or deleted. `
      + 'Paged oldest first: `limit` (default 1000, at most 5000) and `cursor` (the previous page\'s `nextCursor`; null on the last page). '
      + 'Pages leave no gap: an entry of a change still committing when a page was read comes on a later page.',
    query: auditQuery,
    answer: { status: 200, description: 'Entries, oldest first', schema: auditAnswer },
  },
];
