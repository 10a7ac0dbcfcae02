import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { parse } from '../validation.js';
import { verifyWebhookSignature } from '../../shared/psp/signature.js';
import { webhookEventSchema } from '../../shared/psp/webhook-event.js';
import { DomainError } from '../../shared/domain/errors.js';
import { handleWebhook } from '../../shared/usecases/payments.js';
import { logger } from '../../shared/logger.js';

export function paymentRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.post('/payments/webhook', async (ctx) => {
    // The signature covers the raw body and is checked before the body is judged.
    const raw = ctx.state.rawBody ?? '';
    const now = Math.floor(deps.clock.now().getTime() / 1000);
    if (!verifyWebhookSignature(deps.config.PAYMENT_WEBHOOK_SECRET, ctx.get('psp-signature') || undefined, raw, now)) {
      throw new DomainError('INVALID_SIGNATURE', 'webhook signature missing, wrong, or outside 300 s');
    }
    const e = parse(webhookEventSchema, jsonBody(ctx.state), 'body');
    const outcome = await handleWebhook(deps, { ...e, created: e.created ?? now });
    logger.info({ eventId: e.id, type: e.type, reference: e.data.reference, outcome }, 'webhook applied');
    ctx.body = { received: true };
  });
  return router;
}
