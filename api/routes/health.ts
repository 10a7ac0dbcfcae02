import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context.js';
import { assertReady } from '../../shared/usecases/readiness.js';

export function healthRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/ready', async (ctx) => {
    await assertReady(deps, () => deps.redis.ping());
    ctx.body = { status: 'ready' };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  return router;
}
