import Router from '@koa/router';
import type { ApiState, RouteDeps } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { parse, pathId } from '../validation.js';
import { adjustInventoryBody, availabilityQuery, createHotelBody, createRoomTypeBody, nightRangeQuery } from '../schemas/hotels.js';
import { createHotel, createRoomType } from '../../shared/usecases/catalogue.js';
import { adjustInventory, getInventory, getInventoryAudit } from '../../shared/usecases/inventory.js';
import { searchStays } from '../../shared/usecases/search.js';

export function hotelRoutes(deps: RouteDeps) {
  const router = new Router<ApiState>();
  // Role is checked before the input, so a customer learns nothing about the operator API's shape.
  const auth = authenticate(deps.config.JWT_SECRET, ['operator']);

  router.get('/hotels/availability', async (ctx) => {
    ctx.body = await searchStays(deps, parse(availabilityQuery, ctx.query, 'query'));
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
    ctx.body = await getInventoryAudit(deps, actorOf(ctx.state), roomTypeId, parse(nightRangeQuery, ctx.query, 'query'));
  });
  return router;
}
