import Router from '@koa/router';
import { z } from 'zod';
import type { ApiDeps, ApiState } from '../context.js';
import type { Operation } from '../openapi/operation.js';
import { assertReady, SEARCH_LOAD_MAX_MS } from '../../shared/usecases/readiness.js';

export function healthRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/ready', async (ctx) => {
    await assertReady(deps, () => deps.redis.ping(), () => deps.searchIndex?.builtOrGaveUp(SEARCH_LOAD_MAX_MS) ?? true);
    ctx.body = { status: 'ready' };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = deps.metrics.contentType;
    ctx.body = await deps.metrics.scrape();
  });
  return router;
}

export const healthOperations: Operation[] = [
  {
    operationId: 'health', method: 'get', path: '/health', tag: 'operations', auth: 'public', usesDependencies: false,
    summary: 'Liveness', description: 'The process answers; says nothing about its dependencies.',
    answer: { status: 200, description: 'Alive', schema: z.object({ status: z.literal('ok') }).strict() },
  },
  {
    operationId: 'ready', method: 'get', path: '/ready', tag: 'operations', auth: 'public',
    summary: 'Readiness', description: 'PostgreSQL and Redis answer, the search indexes have had their first load (the first seconds after a start), and the process has not been asked to stop (then 503 while it drains).',
    answer: { status: 200, description: 'Ready for traffic', schema: z.object({ status: z.literal('ready') }).strict() },
  },
  {
    operationId: 'metrics', method: 'get', path: '/metrics', tag: 'operations', auth: 'public', usesDependencies: false,
    summary: 'Prometheus metrics',
    description: 'HTTP latency, bookings by outcome, webhooks, provider calls, queue depths, outbox backlog and age, refunds pending, '
      + 'rate-limiter fail-opens, process metrics. Values read from the database are read here, with a time limit.',
    answer: { status: 200, description: 'Prometheus text exposition format', contentType: 'text/plain; version=0.0.4; charset=utf-8' },
  },
];
