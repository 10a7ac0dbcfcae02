import type Koa from 'koa';
import { Router } from '@koa/router';
import { z } from 'zod';
import type { Background } from './background.js';
import type { Transitions } from './payments.js';
import { newId, type CallLog, type SandboxFaults, type SandboxIntent, type SandboxState } from './state.js';
import { SandboxHttpError, headerKey, idempotent, notFound, parseWith, rawBodyOf, readJson } from './http.js';
import { endpointOf, injectedCode, takeAnswer } from './fault-rules.js';

// The provider API the service calls (CONTRACT.md "Payment provider"): /v1/payment_intents (refunds: sandbox/refunds.ts).

const intentBody = z.object({
  amount: z.number().int().positive(),
  currency: z.string().min(1),
  reference: z.string().min(1),
});

export function findIntent(state: SandboxState, id: string): SandboxIntent {
  const intent = state.intents.get(id);
  if (!intent) throw notFound(`no payment intent ${id}`);
  return intent;
}

/** In front of /v1 only: the API faults (down, slow, failing) and the bearer API key. */
export function v1Guard(faults: SandboxFaults, apiKey: string, background: Background, calls: CallLog): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/v1' && !ctx.path.startsWith('/v1/')) return next();
    const endpoint = endpointOf(ctx.method, ctx.path);
    if (endpoint) calls.record(endpoint);
    if (faults.apiDown) {
      ctx.respond = false;
      ctx.req.socket.destroy();
      return;
    }
    // Read the request before stalling: a slow provider still commits what a timed-out client sent.
    await rawBodyOf(ctx);
    if (faults.apiDelayMs > 0) await background.sleep(faults.apiDelayMs);
    if (Math.random() < faults.apiFailRate) throw new SandboxHttpError(500, 'injected_failure', 'injected failure');
    const injected = takeAnswer(faults, endpoint);
    if (injected?.answer === 'timeout') await background.sleep(injected.hangMs);
    else if (injected) {
      const headers: Record<string, string> = injected.retryAfterS === undefined ? {} : { 'retry-after': String(injected.retryAfterS) };
      throw new SandboxHttpError(injected.answer, injectedCode(injected.answer), `injected ${injected.answer}`, headers);
    }
    if (ctx.get('authorization') !== `Bearer ${apiKey}`) throw new SandboxHttpError(401, 'unauthenticated', 'bad or missing API key');
    return next();
  };
}

export function v1Routes(
  state: SandboxState,
  faults: SandboxFaults,
  transitions: Transitions,
  settings: { publicUrl?: string },
) {
  // Intents and refunds (sandbox/refunds.ts) have separate key spaces, both in the state (the forget knob empties them).
  const intentKeys = state.idempotencyKeys.intents;
  const api = new Router({ prefix: '/v1' });

  api.post('/payment_intents', async (ctx) => {
    const body = parseWith(intentBody, await readJson(ctx));
    ctx.body = idempotent(intentKeys, headerKey(ctx), body, (id) => findIntent(state, id), () => {
      const id = newId('pi');
      const checkoutUrl = `${settings.publicUrl ?? 'http://127.0.0.1'}/checkout/${id}`;
      const intent: SandboxIntent = { id, status: 'requires_payment', ...body, checkoutUrl, providerTxnId: null };
      state.intents.set(id, intent);
      return intent;
    });
  });
  api.get('/payment_intents', (ctx) => {
    const reference = typeof ctx.query.reference === 'string' ? ctx.query.reference : undefined;
    const data = [...state.intents.values()].filter((i) => reference === undefined || i.reference === reference);
    // Like a list that does not expand the charge: the caller learns the success but not its transaction id.
    ctx.body = { data: faults.listWithoutTxnId ? data.map((i) => ({ ...i, providerTxnId: null })) : data };
  });
  // Any intent but a succeeded one can be cancelled (again: idempotent); a cancelled intent can no longer be paid.
  api.post('/payment_intents/:id/cancel', (ctx) => {
    const intent = findIntent(state, ctx.params.id!);
    if (intent.status === 'succeeded') {
      ctx.status = 409;
      ctx.body = { error: { code: 'intent_succeeded', message: 'the payment intent has already succeeded' }, intent };
      return;
    }
    transitions.cancel(intent);
    ctx.body = intent;
  });
  api.get('/payment_intents/:id', (ctx) => {
    ctx.body = findIntent(state, ctx.params.id!);
  });
  return api;
}
