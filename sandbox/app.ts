import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { Logger } from 'pino';
import { logger as rootLogger } from '../shared/logger.js';
import { createBackground } from './background.js';
import { createWebhooks } from './webhooks.js';
import { createTransitions } from './payments.js';
import { errorResponses } from './http.js';
import { v1Guard, v1Routes } from './v1-api.js';
import { checkoutPages } from './checkout-pages.js';
import { controlRoutes } from './control.js';
import { refundRoutes } from './refunds.js';
import { callLog, defaultFaults, type SandboxFaults, type SandboxState } from './state.js';

export { defaultFaults } from './state.js';
export type { SandboxFaults, SandboxIntent, SandboxRefund, SandboxState, SentWebhook } from './state.js';
export type { SentWebhookEvent as WebhookEvent, WebhookEventType } from '../shared/psp/webhook-event.js';

export interface PspSandboxOptions {
  apiKey: string;
  webhookSecret: string;
  webhookUrl: string;
  /** Base of checkout URLs; defaults to the address `listen` binds. */
  publicUrl?: string;
  webhookAttempts?: number;
  webhookBackoffMs?: number;
  logger?: Logger;
}

/**
 * The sandbox payment provider: a stand-in for the external party, in memory. `state`, `faults` and
 * `settings` are live objects tests may read and change.
 */
export function createPspSandbox(options: PspSandboxOptions) {
  const { apiKey, webhookSecret, webhookAttempts = 5, webhookBackoffMs = 250 } = options;
  const settings: { webhookUrl: string; publicUrl?: string } = { webhookUrl: options.webhookUrl, publicUrl: options.publicUrl };
  const log = options.logger ?? rootLogger.child({ component: 'psp-sandbox' });
  const state: SandboxState = {
    intents: new Map(), refunds: [], webhooks: [], idempotencyKeys: { intents: new Map(), refunds: new Map() }, calls: callLog(),
  };
  const faults: SandboxFaults = { ...defaultFaults };
  const background = createBackground(log);
  const webhooks = createWebhooks(state, faults, settings, background, { webhookSecret, attempts: webhookAttempts, backoffMs: webhookBackoffMs }, log);
  const transitions = createTransitions(faults, webhooks, background);
  let server: Server | undefined;

  const app = new Koa();
  app.use(errorResponses(log));
  // GET /health: the process is up (compose's healthcheck); outside /v1, so it needs no API key.
  app.use(async (ctx, next) => {
    if (ctx.method !== 'GET' || ctx.path !== '/health') return next();
    ctx.body = { status: 'ok' };
  });
  app.use(v1Guard(faults, apiKey, background, state.calls));
  const refunds = refundRoutes(state, faults, transitions, background);
  const routers = [v1Routes(state, faults, transitions, settings), refunds.api, refunds.control, checkoutPages(state, transitions), controlRoutes(state, faults, transitions, webhooks, background)];
  for (const r of routers) app.use(r.routes()).use(r.allowedMethods());

  return {
    app,
    state,
    faults,
    /** Mutable: point webhooks elsewhere at runtime (e.g. once the API's port is known). */
    settings,
    async listen(port = 0, host = '127.0.0.1'): Promise<{ server: Server; url: string }> {
      const s = app.listen(port, host);
      server = s;
      await new Promise<void>((resolve, reject) => s.once('listening', resolve).once('error', reject));
      const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${(s.address() as AddressInfo).port}`;
      settings.publicUrl ??= url;
      return { server: s, url };
    },
    /** Resolves once no webhook delivery or delayed transition is pending. */
    idle: background.idle,
    async close(): Promise<void> {
      await background.close();
      if (server) {
        const s = server;
        server = undefined;
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}

export type PspSandbox = ReturnType<typeof createPspSandbox>;
