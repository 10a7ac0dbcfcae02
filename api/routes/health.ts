import Router from '@koa/router';
import { sql } from '../../shared/db/pool.js';
import type { ApiDeps, ApiState } from '../context.js';
import { DomainError } from '../../shared/domain/errors.js';
import { shutdownRequested } from '../../shared/supervision.js';

const within = <T>(ms: number, p: Promise<T>) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);

export function healthRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/ready', async (ctx) => {
    // A stopping process takes no new traffic, even while it still drains the requests it has.
    if (shutdownRequested()) throw new DomainError('UNAVAILABLE', 'shutting down', { stopping: true });
    const [pg, redis] = await Promise.allSettled([
      within(2000, deps.db.oneFirst(sql.unsafe`SELECT 1`)),
      within(2000, deps.redis.ping()),
    ]);
    if (pg.status === 'fulfilled' && redis.status === 'fulfilled') {
      ctx.body = { status: 'ready' };
      return;
    }
    throw new DomainError('UNAVAILABLE', 'not ready', {
      postgres: pg.status === 'fulfilled' ? 'ok' : 'down',
      redis: redis.status === 'fulfilled' ? 'ok' : 'down',
    });
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });
  return router;
}
