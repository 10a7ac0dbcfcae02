import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa from 'koa';
import { Router } from '@koa/router';
import getRawBody from 'raw-body';
import type { Logger } from 'pino';
import { z } from 'zod';
import { logger as rootLogger } from '../../shared/logger.js';
import { refundStatuses, type PaymentIntent, type Refund } from '../../shared/psp/client.js';
import { signWebhook } from '../../shared/psp/signature.js';

export type WebhookEventType =
  | 'payment_intent.succeeded'
  | 'payment_intent.processing'
  | 'payment_intent.payment_failed'
  | 'refund.succeeded'
  | 'refund.failed';

export interface WebhookEvent {
  id: string;
  type: WebhookEventType;
  created: number;
  data: {
    paymentIntentId: string;
    reference: string;
    amount: number;
    currency: string;
    providerTxnId: string | null;
    refundId?: string;
  };
}

export type SandboxIntent = PaymentIntent & { providerTxnId: string | null };
export type SandboxRefund = Refund & { paymentIntentId: string; reference: string; currency: string };
export interface SentWebhook {
  event: WebhookEvent;
  attempts: number;
  delivered: number;
  lastError: string | null;
}
export interface SandboxState {
  intents: Map<string, SandboxIntent>;
  refunds: SandboxRefund[];
  webhooks: SentWebhook[];
}

const faultsSchema = z.object({
  duplicateDeliveries: z.number().int().min(0).max(20),
  webhookDelayMs: z.number().int().min(0),
  outOfOrder: z.boolean(),
  processingFirstMs: z.number().int().min(0),
  apiDelayMs: z.number().int().min(0),
  apiFailRate: z.number().min(0).max(1),
  apiDown: z.boolean(),
  refundOutcome: z.enum(refundStatuses),
  refundSettleMs: z.number().int().min(0),
});
export type SandboxFaults = z.infer<typeof faultsSchema>;
export const defaultFaults: Readonly<SandboxFaults> = Object.freeze({
  duplicateDeliveries: 0,
  webhookDelayMs: 0,
  outOfOrder: false,
  processingFirstMs: 0,
  apiDelayMs: 0,
  apiFailRate: 0,
  apiDown: false,
  refundOutcome: 'succeeded',
  refundSettleMs: 500,
});

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

const intentBody = z.object({
  amount: z.number().int().positive(),
  currency: z.string().min(1),
  reference: z.string().min(1),
});
const refundBody = z.object({
  paymentIntentId: z.string().min(1),
  amount: z.number().int().positive(),
  reference: z.string().min(1),
  currency: z.string().min(1).optional(),
});
const overrideBody = z.object({ amount: z.number().int().optional() }).default({});

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const nowS = () => Math.floor(Date.now() / 1000);

export function createPspSandbox(options: PspSandboxOptions) {
  const { apiKey, webhookSecret, webhookAttempts = 5, webhookBackoffMs = 250 } = options;
  const settings = { webhookUrl: options.webhookUrl, publicUrl: options.publicUrl };
  const log = options.logger ?? rootLogger.child({ component: 'psp-sandbox' });
  const state: SandboxState = { intents: new Map(), refunds: [], webhooks: [] };
  const faults: SandboxFaults = { ...defaultFaults };
  // Idempotency-Key → created object id and request fingerprint; intents and refunds have separate key spaces.
  const intentKeys = new Map<string, { id: string; fingerprint: string }>();
  const refundKeys = new Map<string, { id: string; fingerprint: string }>();
  const shutdown = new AbortController();
  const inflight = new Set<Promise<unknown>>();
  let server: Server | undefined;

  function track(work: Promise<unknown>): void {
    const p = work
      .catch((e: unknown) => {
        if (!shutdown.signal.aborted) log.error({ err: e }, 'sandbox background task failed');
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  }
  /** Resolves once no webhook delivery or delayed transition is pending. */
  async function idle(): Promise<void> {
    while (inflight.size > 0) await Promise.allSettled([...inflight]);
  }
  const later = (ms: number, fn: () => void) =>
    track(sleep(ms, undefined, { signal: shutdown.signal }).then(fn));

  // ---- webhooks ----
  async function deliverCopy(sent: SentWebhook): Promise<void> {
    const body = JSON.stringify(sent.event);
    for (let attempt = 0; attempt < webhookAttempts; attempt++) {
      if (attempt > 0) await sleep(webhookBackoffMs * 2 ** (attempt - 1), undefined, { signal: shutdown.signal });
      sent.attempts++;
      try {
        const res = await fetch(settings.webhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'psp-signature': signWebhook(webhookSecret, body, nowS()) },
          body,
          signal: AbortSignal.any([shutdown.signal, AbortSignal.timeout(5_000)]),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) {
          sent.delivered++;
          return;
        }
        sent.lastError = `HTTP ${res.status}`;
      } catch (e) {
        if (shutdown.signal.aborted) return;
        sent.lastError = e instanceof Error ? e.message : String(e);
      }
    }
    log.warn({ eventId: sent.event.id, type: sent.event.type, lastError: sent.lastError }, 'webhook delivery gave up');
  }

  async function deliver(sent: SentWebhook, copies: number): Promise<void> {
    if (faults.webhookDelayMs > 0) await sleep(faults.webhookDelayMs, undefined, { signal: shutdown.signal });
    // Copies go out concurrently: the harshest case for the receiver's deduplication.
    await Promise.all(Array.from({ length: copies }, () => deliverCopy(sent)));
  }

  /** Events of one batch are delivered one after another, reversed when asked to. */
  function dispatch(batch: WebhookEvent[], reverse = faults.outOfOrder): void {
    const ordered = reverse ? [...batch].reverse() : batch;
    const sent = ordered.map((event) => ({ event, attempts: 0, delivered: 0, lastError: null }));
    state.webhooks.push(...sent);
    const copies = 1 + faults.duplicateDeliveries;
    track((async () => {
      for (const s of sent) await deliver(s, copies);
    })());
  }

  function intentEvent(type: WebhookEventType, intent: SandboxIntent, amount = intent.amount): WebhookEvent {
    const providerTxnId = type === 'payment_intent.succeeded' ? intent.providerTxnId : null;
    const { id: paymentIntentId, reference, currency } = intent;
    return { id: newId('evt'), type, created: nowS(), data: { paymentIntentId, reference, amount, currency, providerTxnId } };
  }

  function refundEvent(refund: SandboxRefund): WebhookEvent {
    const type = refund.status === 'failed' ? 'refund.failed' : 'refund.succeeded';
    const { paymentIntentId, reference, amount, currency } = refund;
    const providerTxnId = state.intents.get(paymentIntentId)?.providerTxnId ?? null;
    const data = { paymentIntentId, reference, amount, currency, providerTxnId, refundId: refund.id };
    return { id: newId('evt'), type, created: nowS(), data };
  }

  // ---- transitions ----
  function settleSucceeded(intent: SandboxIntent, amount?: number): WebhookEvent {
    intent.status = 'succeeded';
    intent.providerTxnId ??= newId('txn');
    return intentEvent('payment_intent.succeeded', intent, amount);
  }

  function succeed(intent: SandboxIntent, amount?: number): void {
    if (faults.processingFirstMs <= 0) return dispatch([settleSucceeded(intent, amount)]);
    intent.status = 'processing';
    const processing = intentEvent('payment_intent.processing', intent, amount);
    const reverse = faults.outOfOrder;
    // Out of order: hold the processing event back so it lands after the success.
    if (!reverse) dispatch([processing], false);
    later(faults.processingFirstMs, () => {
      if (intent.status !== 'processing') return reverse ? dispatch([processing], false) : undefined;
      dispatch(reverse ? [processing, settleSucceeded(intent, amount)] : [settleSucceeded(intent, amount)], reverse);
    });
  }

  function fail(intent: SandboxIntent, amount?: number): void {
    intent.status = 'failed';
    dispatch([intentEvent('payment_intent.payment_failed', intent, amount)]);
  }

  function markProcessing(intent: SandboxIntent, amount?: number): void {
    intent.status = 'processing';
    dispatch([intentEvent('payment_intent.processing', intent, amount)]);
  }

  function settleRefund(refund: SandboxRefund, status: 'succeeded' | 'failed'): void {
    refund.status = status;
    dispatch([refundEvent(refund)]);
  }

  // ---- HTTP ----
  function rawBodyOf(ctx: Koa.Context): Promise<string> {
    const state = ctx.state as { rawBody?: Promise<string> };
    state.rawBody ??= getRawBody(ctx.req, { limit: '1mb', encoding: 'utf8' });
    return state.rawBody;
  }
  async function readJson(ctx: Koa.Context): Promise<unknown> {
    const text = await rawBodyOf(ctx);
    if (text.trim() === '') return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw new HttpError(400, 'invalid_json', 'body is not valid JSON');
    }
  }
  function parse<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown): T {
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    const message = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new HttpError(400, 'invalid_request', message);
  }
  function findIntent(id: string): SandboxIntent {
    const intent = state.intents.get(id);
    if (!intent) throw new HttpError(404, 'not_found', `no payment intent ${id}`);
    return intent;
  }
  /** Same key and body → the object created first (as it is now); same key, other body → 422. */
  function idempotent<T extends { id: string }>(
    keys: Map<string, { id: string; fingerprint: string }>,
    key: string | undefined,
    body: object,
    find: (id: string) => T,
    create: () => T,
  ): T {
    const fingerprint = JSON.stringify(body);
    const seen = key === undefined ? undefined : keys.get(key);
    if (seen) {
      if (seen.fingerprint === fingerprint) return find(seen.id);
      throw new HttpError(422, 'idempotency_key_reused', 'Idempotency-Key reused with a different body');
    }
    const created = create();
    if (key !== undefined) keys.set(key, { id: created.id, fingerprint });
    return created;
  }
  const headerKey = (ctx: Koa.Context) => ctx.get('idempotency-key') || undefined;

  const api = new Router({ prefix: '/v1' });
  api.post('/payment_intents', async (ctx) => {
    const body = parse(intentBody, await readJson(ctx));
    ctx.body = idempotent(intentKeys, headerKey(ctx), body, findIntent, () => {
      const id = newId('pi');
      const checkoutUrl = `${settings.publicUrl ?? 'http://127.0.0.1'}/checkout/${id}`;
      const intent: SandboxIntent = { id, status: 'requires_payment', ...body, checkoutUrl, providerTxnId: null };
      state.intents.set(id, intent);
      return intent;
    });
  });
  api.get('/payment_intents', (ctx) => {
    const reference = typeof ctx.query.reference === 'string' ? ctx.query.reference : undefined;
    ctx.body = { data: [...state.intents.values()].filter((i) => reference === undefined || i.reference === reference) };
  });
  api.get('/payment_intents/:id', (ctx) => {
    ctx.body = findIntent(ctx.params.id!);
  });
  api.post('/refunds', async (ctx) => {
    const body = parse(refundBody, await readJson(ctx));
    const find = (id: string) => state.refunds.find((r) => r.id === id)!;
    ctx.body = idempotent(refundKeys, headerKey(ctx), body, find, () => {
      // The intent need not be ours: the service may refund payments made elsewhere.
      const currency = body.currency ?? state.intents.get(body.paymentIntentId)?.currency ?? 'VND';
      const { paymentIntentId, amount, reference } = body;
      const refund: SandboxRefund = { id: newId('re'), status: faults.refundOutcome, amount, paymentIntentId, reference, currency };
      state.refunds.push(refund);
      if (refund.status === 'pending') {
        later(faults.refundSettleMs, () => refund.status === 'pending' && settleRefund(refund, 'succeeded'));
      } else {
        dispatch([refundEvent(refund)]);
      }
      return refund;
    });
  });

  const pages = new Router();
  pages.get('/checkout/:id', (ctx) => {
    const intent = findIntent(ctx.params.id!);
    const base = `/checkout/${encodeURIComponent(intent.id)}`;
    ctx.type = 'html';
    ctx.body = page(
      'Checkout',
      `<p>Pay <b>${esc(String(intent.amount))} ${esc(intent.currency)}</b> for booking <b>${esc(intent.reference)}</b></p>
<p>Status: ${esc(intent.status)}</p>
<form method="post" action="${base}/pay"><button type="submit">Pay</button></form>
<form method="post" action="${base}/fail"><button type="submit">Fail payment</button></form>`,
    );
  });
  pages.post('/checkout/:id/:action', (ctx) => {
    const intent = findIntent(ctx.params.id!);
    const action = ctx.params.action;
    if (action !== 'pay' && action !== 'fail') throw new HttpError(404, 'not_found', 'unknown action');
    const allowed = action === 'pay' ? ['requires_payment', 'failed'] : ['requires_payment'];
    ctx.type = 'html';
    if (!allowed.includes(intent.status)) {
      ctx.status = 409;
      ctx.body = page('Nothing to do', `<p>This payment is already ${esc(intent.status)}.</p>`);
      return;
    }
    if (action === 'pay') succeed(intent);
    else fail(intent);
    ctx.body = page('Payment ' + intent.status, `<p>Payment for booking ${esc(intent.reference)}: ${esc(intent.status)}.</p>`);
  });

  const control = new Router({ prefix: '/sandbox' });
  control.get('/faults', (ctx) => {
    ctx.body = faults;
  });
  control.post('/faults', async (ctx) => {
    Object.assign(faults, parse(faultsSchema.partial().strict(), await readJson(ctx)));
    ctx.body = faults;
  });
  control.delete('/faults', (ctx) => {
    Object.assign(faults, defaultFaults);
    ctx.body = faults;
  });
  const intentActions = { succeed, fail, processing: markProcessing } as const;
  control.post('/intents/:id/:action', async (ctx) => {
    const intent = findIntent(ctx.params.id!);
    const action = ctx.params.action!;
    const { amount } = parse(overrideBody, await readJson(ctx));
    if (action === 'succeed-silently') settleSucceeded(intent);
    else if (action === 'processing-silently') intent.status = 'processing';
    else if (action in intentActions) intentActions[action as keyof typeof intentActions](intent, amount);
    else throw new HttpError(404, 'not_found', `unknown action ${action}`);
    ctx.body = intent;
  });
  control.post('/refunds/:id/:outcome', (ctx) => {
    const refund = state.refunds.find((r) => r.id === ctx.params.id);
    if (!refund) throw new HttpError(404, 'not_found', `no refund ${ctx.params.id}`);
    const outcome = ctx.params.outcome;
    if (outcome !== 'succeed' && outcome !== 'fail') throw new HttpError(404, 'not_found', `unknown outcome ${outcome}`);
    settleRefund(refund, outcome === 'succeed' ? 'succeeded' : 'failed');
    ctx.body = refund;
  });
  control.post('/webhooks/replay/:eventId', (ctx) => {
    const original = state.webhooks.find((w) => w.event.id === ctx.params.eventId);
    if (!original) throw new HttpError(404, 'not_found', `no event ${ctx.params.eventId}`);
    const sent: SentWebhook = { event: original.event, attempts: 0, delivered: 0, lastError: null };
    state.webhooks.push(sent);
    track(deliver(sent, 1));
    ctx.status = 202;
    ctx.body = { replayed: original.event.id };
  });
  // Answers once no webhook delivery or delayed transition is pending: lets a test see "nothing more will happen".
  control.post('/idle', async (ctx) => {
    await idle();
    ctx.status = 204;
  });
  control.get('/state', (ctx) => {
    ctx.body = { intents: [...state.intents.values()], refunds: state.refunds, webhooks: state.webhooks };
  });

  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (e) {
      const err = e as { status?: number; expose?: boolean; code?: string; message?: string };
      const status = e instanceof HttpError ? e.status : (err.status ?? 500);
      ctx.status = status;
      ctx.body = {
        error: {
          code: e instanceof HttpError ? e.code : status >= 500 ? 'internal' : 'invalid_request',
          message: status < 500 || err.expose ? String(err.message) : 'internal error',
        },
      };
      if (status >= 500) log.error({ err: e }, 'sandbox request failed');
    }
  });
  app.use(async (ctx, next) => {
    if (ctx.path !== '/v1' && !ctx.path.startsWith('/v1/')) return next();
    if (faults.apiDown) {
      ctx.respond = false;
      ctx.req.socket.destroy();
      return;
    }
    // Read the request before stalling: a slow provider still commits what a timed-out client sent.
    await rawBodyOf(ctx);
    if (faults.apiDelayMs > 0) await sleep(faults.apiDelayMs, undefined, { signal: shutdown.signal });
    if (Math.random() < faults.apiFailRate) throw new HttpError(500, 'injected_failure', 'injected failure');
    if (ctx.get('authorization') !== `Bearer ${apiKey}`) throw new HttpError(401, 'unauthenticated', 'bad or missing API key');
    return next();
  });
  for (const r of [api, pages, control]) app.use(r.routes()).use(r.allowedMethods());

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
    idle,
    async close(): Promise<void> {
      shutdown.abort();
      await Promise.allSettled([...inflight]);
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

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body style="font-family:sans-serif;max-width:32rem;margin:3rem auto"><h1>${esc(title)}</h1>${body}</body></html>`;
}
