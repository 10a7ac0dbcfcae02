import { Router } from '@koa/router';
import { z } from 'zod';
import type { Background } from './background.js';
import type { Transitions } from './payments.js';
import { findRefund, newId, type SandboxFaults, type SandboxRefund, type SandboxState } from './state.js';
import { SandboxHttpError, headerKey, idempotent, notFound, parseWith, readJson } from './http.js';

// The provider's refunds API (POST /v1/refunds, and the read API the service uses to look a refund up before
// creating it again: GET /v1/refunds/{id}, GET /v1/refunds?payment_intent=&reference=), and the refund fault
// knobs at /sandbox/refund-faults (separate from /sandbox/faults).

const refundBody = z.object({
  paymentIntentId: z.string().min(1),
  amount: z.number().int().positive(),
  reference: z.string().min(1),
  currency: z.string().min(1).optional(),
});

export const refundFaultsSchema = z.object({
  /** The next `rejectCount` POST /v1/refunds answer `rejectStatus` and create nothing (401, 409, 429, …). */
  rejectStatus: z.number().int().min(400).max(499),
  rejectCount: z.number().int().min(0),
  /** The next `loseAnswers` POST /v1/refunds create the refund, then answer 500 (the outcome is unknown to the caller). */
  loseAnswers: z.number().int().min(0),
  /** Forget every refund Idempotency-Key right after using it (Stripe forgets them after 24 h). */
  forgetKeys: z.boolean(),
  /** Refunds created meanwhile send no webhook (a `pending` one still settles, silently): only a lookup tells. */
  silentWebhooks: z.boolean(),
});
export type RefundFaults = z.infer<typeof refundFaultsSchema>;
const defaultRefundFaults: Readonly<RefundFaults> = Object.freeze({
  rejectStatus: 429, rejectCount: 0, loseAnswers: 0, forgetKeys: false, silentWebhooks: false,
});

/** The refund routes under /v1 (behind v1Guard) and their control knobs under /sandbox. */
export function refundRoutes(state: SandboxState, faults: SandboxFaults, transitions: Transitions, background: Background) {
  // In the state, so POST /sandbox/idempotency-keys/forget (sandbox/control.ts) forgets them too.
  const keys = state.idempotencyKeys.refunds;
  const knobs: RefundFaults = { ...defaultRefundFaults };
  const api = new Router({ prefix: '/v1' });

  function create(body: z.infer<typeof refundBody>): SandboxRefund {
    // The intent need not be ours: the service may refund payments made elsewhere.
    const currency = body.currency ?? state.intents.get(body.paymentIntentId)?.currency ?? 'VND';
    const { paymentIntentId, amount, reference } = body;
    const refund: SandboxRefund = { id: newId('re'), status: faults.refundOutcome, amount, paymentIntentId, reference, currency };
    state.refunds.push(refund);
    if (!knobs.silentWebhooks) transitions.refundCreated(refund);
    else if (refund.status === 'pending') background.later(faults.refundSettleMs, () => { if (refund.status === 'pending') refund.status = 'succeeded'; });
    return refund;
  }

  api.post('/refunds', async (ctx) => {
    const body = parseWith(refundBody, await readJson(ctx));
    if (knobs.rejectCount > 0) {
      knobs.rejectCount--;
      throw new SandboxHttpError(knobs.rejectStatus, 'injected_rejection', `injected ${knobs.rejectStatus}`);
    }
    const key = headerKey(ctx);
    const refund = idempotent(keys, key, body, (id) => findRefund(state, id)!, () => create(body));
    if (knobs.forgetKeys && key !== undefined) keys.delete(key);
    if (knobs.loseAnswers > 0) {
      knobs.loseAnswers--;
      throw new SandboxHttpError(500, 'injected_failure', 'injected failure after creating the refund');
    }
    ctx.body = refund;
  });
  api.get('/refunds', (ctx) => {
    const q = (name: string) => (typeof ctx.query[name] === 'string' ? (ctx.query[name] as string) : undefined);
    const intent = q('payment_intent');
    const reference = q('reference');
    ctx.body = {
      data: state.refunds.filter((r) => (intent === undefined || r.paymentIntentId === intent) && (reference === undefined || r.reference === reference)),
    };
  });
  api.get('/refunds/:id', (ctx) => {
    const refund = findRefund(state, ctx.params.id!);
    if (!refund) throw notFound(`no refund ${ctx.params.id}`);
    ctx.body = refund;
  });

  const control = new Router({ prefix: '/sandbox' });
  control.get('/refund-faults', (ctx) => {
    ctx.body = knobs;
  });
  control.post('/refund-faults', async (ctx) => {
    Object.assign(knobs, parseWith(refundFaultsSchema.partial().strict(), await readJson(ctx)));
    ctx.body = knobs;
  });
  control.delete('/refund-faults', (ctx) => {
    Object.assign(knobs, defaultRefundFaults);
    ctx.body = knobs;
  });
  /** Forgets every refund Idempotency-Key at once. */
  control.post('/refunds/forget-keys', (ctx) => {
    const forgotten = keys.size;
    keys.clear();
    ctx.body = { forgotten };
  });
  return { api, control };
}
