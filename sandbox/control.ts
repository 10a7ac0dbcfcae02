import { Router } from '@koa/router';
import { z } from 'zod';
import type { Background } from './background.js';
import type { Transitions } from './payments.js';
import type { Webhooks } from './webhooks.js';
import { defaultFaults, faultsSchema, findRefund, type SandboxFaults, type SandboxState } from './state.js';
import { notFound, parseWith, readJson } from './http.js';
import { findIntent } from './v1-api.js';
import { answerRuleSchema } from './fault-rules.js';

// /sandbox: what tests and developers use to steer the provider (faults, outcomes, replays, state).

const overrideBody = z.object({ amount: z.number().int().optional() }).default({});

export function controlRoutes(state: SandboxState, faults: SandboxFaults, transitions: Transitions, webhooks: Webhooks, background: Background) {
  const control = new Router({ prefix: '/sandbox' });
  control.get('/faults', (ctx) => {
    ctx.body = faults;
  });
  control.post('/faults', async (ctx) => {
    Object.assign(faults, parseWith(faultsSchema.partial().strict(), await readJson(ctx)));
    ctx.body = faults;
  });
  // One more per-endpoint injected answer (sandbox/fault-rules.ts), after those already set.
  control.post('/faults/answers', async (ctx) => {
    faults.answers = [...faults.answers, parseWith(answerRuleSchema, await readJson(ctx))];
    ctx.body = faults;
  });
  // The provider forgets every Idempotency-Key it was given (as Stripe does after 24 h): a retried POST creates anew.
  control.post('/idempotency-keys/forget', (ctx) => {
    const forgotten = state.idempotencyKeys.intents.size + state.idempotencyKeys.refunds.size;
    state.idempotencyKeys.intents.clear();
    state.idempotencyKeys.refunds.clear();
    ctx.body = { forgotten };
  });
  control.delete('/faults', (ctx) => {
    Object.assign(faults, defaultFaults);
    ctx.body = faults;
  });
  const intentActions = { succeed: transitions.succeed, fail: transitions.fail, processing: transitions.markProcessing } as const;
  control.post('/intents/:id/:action', async (ctx) => {
    const intent = findIntent(state, ctx.params.id!);
    const action = ctx.params.action!;
    const { amount } = parseWith(overrideBody, await readJson(ctx));
    if (action === 'succeed-silently') transitions.settleSucceeded(intent);
    else if (action === 'processing-silently') intent.status = 'processing';
    else if (action in intentActions) intentActions[action as keyof typeof intentActions](intent, amount);
    else throw notFound(`unknown action ${action}`);
    ctx.body = intent;
  });
  control.post('/refunds/:id/:outcome', (ctx) => {
    const refund = findRefund(state, ctx.params.id!);
    if (!refund) throw notFound(`no refund ${ctx.params.id}`);
    const outcome = ctx.params.outcome;
    if (outcome !== 'succeed' && outcome !== 'fail') throw notFound(`unknown outcome ${outcome}`);
    transitions.settleRefund(refund, outcome === 'succeed' ? 'succeeded' : 'failed');
    ctx.body = refund;
  });
  control.post('/webhooks/replay/:eventId', (ctx) => {
    const original = state.webhooks.find((w) => w.event.id === ctx.params.eventId);
    if (!original) throw notFound(`no event ${ctx.params.eventId}`);
    webhooks.replay(original.event);
    ctx.status = 202;
    ctx.body = { replayed: original.event.id };
  });
  // Answers once no webhook delivery or delayed transition is pending: lets a test see "nothing more will happen".
  control.post('/idle', async (ctx) => {
    await background.idle();
    ctx.status = 204;
  });
  // The same question without waiting: is anything pending right now?
  control.get('/idle', (ctx) => {
    const pending = background.pending();
    ctx.body = { idle: pending === 0, pending };
  });
  control.get('/state', (ctx) => {
    ctx.body = { intents: [...state.intents.values()], refunds: state.refunds, webhooks: state.webhooks, calls: state.calls.list() };
  });
  return control;
}
