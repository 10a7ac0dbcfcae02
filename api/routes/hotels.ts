import Router from '@koa/router';
import { z } from 'zod';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { actorOf, authenticate } from '../middleware/auth.js';
import { currency, isoDate, money, parse, pathId, queryInt, text } from '../validation.js';
import { createHotel, createRoomType } from '../../shared/usecases/catalogue.js';
import { adjustInventory, getInventory, getInventoryAudit } from '../../shared/usecases/inventory.js';
import { MAX_STAY_NIGHTS } from '../../shared/domain/booking.js';
import { nightsBetween } from '../../shared/domain/nights.js';
import { searchAvailability } from '../../shared/db/hotels.js';
import { cachedSearch } from '../search-cache.js';

const newHotel = z.object({
  name: text(200),
  city: text(50),
  timezone: text(64),
  checkInTime: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM').default('14:00'),
});
const newRoomType = z.object({ name: text(200), depositAmount: money, currency: currency.default('VND') });
const range = z.object({ from: isoDate, to: isoDate });
const adjust = range.extend({ sellable: z.number().int().min(0).max(100_000), reason: text(500) });
const availability = z
  .object({ city: text(50), checkIn: isoDate, checkOut: isoDate, rooms: queryInt(1, 1, 100) })
  .refine((q) => nightsBetween(q.checkIn, q.checkOut) >= 1, { path: ['checkOut'], message: 'checkOut must be after checkIn' })
  .refine((q) => nightsBetween(q.checkIn, q.checkOut) <= MAX_STAY_NIGHTS, { path: ['checkOut'], message: 'at most 30 nights' });

export function hotelRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  // Role is checked before the input, so a customer learns nothing about the operator API's shape.
  const auth = authenticate(deps.config.JWT_SECRET, ['operator']);

  router.get('/hotels/availability', async (ctx) => {
    const q = parse(availability, ctx.query, 'query');
    const key = `${q.city}|${q.checkIn}|${q.checkOut}|${q.rooms}`;
    const roomTypes = await cachedSearch(deps.redis, deps.metrics, 'stays', key, deps.config.SEARCH_CACHE_TTL_S, () =>
      searchAvailability(deps.db, { ...q, nights: nightsBetween(q.checkIn, q.checkOut) }));
    ctx.body = { roomTypes };
  });
  router.post('/hotels', auth, async (ctx) => {
    const input = parse(newHotel, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createHotel(deps, actorOf(ctx.state), input);
  });
  router.post('/hotels/:hotelId/room-types', auth, async (ctx) => {
    const hotelId = pathId(ctx.params.hotelId, 'hotel');
    const input = parse(newRoomType, jsonBody(ctx.state), 'body');
    ctx.status = 201;
    ctx.body = await createRoomType(deps, actorOf(ctx.state), { ...input, hotelId });
  });
  router.put('/room-types/:id/inventory', auth, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    const input = parse(adjust, jsonBody(ctx.state), 'body');
    ctx.body = await adjustInventory(deps, actorOf(ctx.state), roomTypeId, input);
  });
  router.get('/room-types/:id/inventory', auth, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    ctx.body = await getInventory(deps, actorOf(ctx.state), roomTypeId, parse(range, ctx.query, 'query'));
  });
  router.get('/room-types/:id/inventory/audit', auth, async (ctx) => {
    const roomTypeId = pathId(ctx.params.id, 'room type');
    ctx.body = await getInventoryAudit(deps, actorOf(ctx.state), roomTypeId, parse(range, ctx.query, 'query'));
  });
  return router;
}
