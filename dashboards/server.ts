import { timingSafeEqual, createHash } from 'node:crypto';
import Koa from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { parseConfig, type Config } from '../shared/config.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { JOB_KINDS } from '../shared/domain/jobs.js';
import { noJobs, openProducers } from '../shared/queues/producer.js';
import { QUEUES } from '../shared/queues/registry.js';
import { sameOriginActions } from './same-origin.js';
import { processRegistry } from '../shared/metrics/registry.js';
import { closeDeps, createDeps, type ProcessDeps } from '../shared/runtime.js';
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

/** A job's link to its booking's operator page, on the dashboard's own origin (jobs without a booking have none). */
export function bookingLink(job: { data?: unknown }): { displayText: string; href: string } | undefined {
  const id = (job.data as { bookingId?: unknown } | undefined)?.bookingId;
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? { displayText: `Booking ${id}`, href: `/admin/bookings/${id}` } : undefined;
}

/**
 * bull-board at /admin/queues over every queue of the registry, and the operator page at /admin/bookings, both behind
 * HTTP Basic auth and the cross-site rules (/metrics is public). bull-board shows each queue by its display name
 * (no hash tag) and description, retries allowed, and each job linked to its booking's operator page. Every action (retry, promote, clean, obliterate) is safe: handlers act only
 * through their row, and the reconciler re-arms what an operator removed.
 */
export async function createDashboard(config: Config) {
  // The dashboard lists and acts on jobs: the reconciler's connection (fails fast, but not within 300 ms).
  const producers = openProducers(config, 'reconciler');
  // The operator page (dashboards/operator-page.ts) reads bookings and their stories through the use cases: a small
  // pool, opened on its first request; it adds no jobs.
  let deps: Promise<ProcessDeps> | null = null;
  const openDeps = () => (deps ??= createDeps(config, { poolSize: 2, preparedPoolSize: 1, jobs: noJobs }).catch((e) => {
    deps = null;
    throw e;
  }));
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath('/admin/queues');
  createBullBoard({
    queues: JOB_KINDS.map((k) => new BullMQAdapter(producers.queues[k], {
      displayName: QUEUES[k].displayName, description: QUEUES[k].description, allowRetries: true,
      externalJobUrl: bookingLink as (job: unknown) => { displayText: string; href: string },
    })),
    serverAdapter,
  });
  const app = new Koa();
  app.use(metricsRoute);
  app.use(basicAuth(config.DASHBOARD_USER, config.DASHBOARD_PASSWORD));
  app.use(sameOriginActions());
  app.use(operatorPages(openDeps, producers.queues));
  await app.use(serverAdapter.registerPlugin());
  return {
    app,
    close: async () => {
      await producers.close();
      const d = await deps?.catch(() => null);
      if (d) await closeDeps(d);
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
