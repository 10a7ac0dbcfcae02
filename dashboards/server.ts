import { timingSafeEqual, createHash } from 'node:crypto';
import Koa from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { parseConfig, type Config } from '../shared/config.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { closeQueues, openQueues } from '../shared/queues/queues.js';
import { sameOriginActions } from './same-origin.js';
import { processRegistry } from '../shared/metrics/registry.js';
import { createDeps } from '../shared/runtime.js';
import { operatorPages } from './operator-page.js';

const digest = (s: string) => createHash('sha256').update(s).digest();
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

/** HTTP Basic auth compared in constant time; 401 with a challenge otherwise. */
export function basicAuth(user: string, password: string): Koa.Middleware {
  return async (ctx, next) => {
    const m = ctx.get('authorization').match(/^Basic\s+(\S+)$/i);
    const [u, ...rest] = m ? Buffer.from(m[1]!, 'base64').toString('utf8').split(':') : [];
    if (u !== undefined && same(u, user) && same(rest.join(':'), password)) return next();
    ctx.status = 401;
    ctx.set('WWW-Authenticate', 'Basic realm="queues"');
    ctx.body = { error: { code: 'UNAUTHENTICATED', message: 'dashboard credentials required' } };
  };
}

/** GET /metrics: this process's metrics, public like the api's (Prometheus scrapes without credentials). */
const metricsRoute: Koa.Middleware = async (ctx, next) => {
  if (ctx.path !== '/metrics' || ctx.method !== 'GET') return next();
  ctx.type = processRegistry.contentType;
  ctx.body = await processRegistry.metrics();
};

/**
 * bull-board at /admin/queues and the operator page at /admin/bookings (dashboards/operator-page.ts), both behind
 * HTTP Basic auth and the cross-site rules; /metrics is public.
 */
export async function createDashboard(config: Config) {
  const queues = openQueues(config);
  // The operator page reads bookings and their stories through the use cases: a small pool, opened on its first
  // request (bull-board itself needs no PostgreSQL).
  let deps: ReturnType<typeof createDeps> | null = null;
  const openDeps = () => (deps ??= createDeps(config, { poolSize: 2, preparedPoolSize: 1 }).catch((e) => {
    deps = null;
    throw e;
  }));
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath('/admin/queues');
  createBullBoard({ queues: Object.values(queues).map((q) => new BullMQAdapter(q)), serverAdapter });
  const app = new Koa();
  app.use(metricsRoute);
  app.use(basicAuth(config.DASHBOARD_USER, config.DASHBOARD_PASSWORD));
  app.use(sameOriginActions());
  app.use(operatorPages(openDeps, Object.values(queues)));
  await app.use(serverAdapter.registerPlugin());
  return {
    app,
    close: async () => {
      await closeQueues(queues);
      const d = await deps?.catch(() => null);
      await d?.db.end();
      await d?.prepared.end();
    },
  };
}

if (isEntry(import.meta.url)) {
  await runProcess('dashboard', async () => {
    const config = parseConfig();
    const { app, close } = await createDashboard(config);
    const server = app.listen(config.DASHBOARD_PORT, () => logger.info({ port: config.DASHBOARD_PORT }, 'dashboard listening'));
    return async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await close();
    };
  });
}
