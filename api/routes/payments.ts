import Router from '@koa/router';
import { z } from 'zod';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { parse } from '../validation.js';
import { verifyWebhookSignature } from '../../shared/psp/signature.js';
import { DomainError, validation } from '../../shared/domain/errors.js';
import { handleWebhook } from '../../shared/usecases/payments.js';
import { logger } from '../../shared/logger.js';

const str = z.string().min(1).max(255);
const event = z.object({
  id: str,
  type: str,
  created: z.number().int().optional(),
  data: z.object({
    paymentIntentId: str,
    reference: z.string().max(64),
    amount: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    currency: z.string().min(1).max(8),
    providerTxnId: str.nullable().optional().default(null),
    refundId: str.nullable().optional(),
  }),
});

export function paymentRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.post('/payments/webhook', async (ctx) => {
    const raw = ctx.state.rawBody ?? '';
    const now = Math.floor(deps.clock.now().getTime() / 1000);
    if (!verifyWebhookSignature(deps.config.PAYMENT_WEBHOOK_SECRET, ctx.get('psp-signature') || undefined, raw, now)) {
      throw new DomainError('INVALID_SIGNATURE', 'webhook signature missing, wrong, or outside 300 s');
    }
    const e = parse(event, jsonBody(ctx.state), 'body');
    // Effects happen once per providerTxnId: a success must name it.
    if (e.type === 'payment_intent.succeeded' && !e.data.providerTxnId) throw validation('data.providerTxnId', 'data.providerTxnId: Required');
    const outcome = await handleWebhook(deps, { ...e, created: e.created ?? now });
    logger.info({ eventId: e.id, type: e.type, reference: e.data.reference, outcome }, 'webhook applied');
    ctx.body = { received: true };
  });
  return router;
}
