import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context.js';
import { jsonBody } from '../middleware/body.js';
import { parse } from '../validation.js';
import { header } from '../headers.js';
import { verifyWebhookSignature } from '../../shared/psp/signature.js';
import { WEBHOOK_EVENT_TYPES, webhookEventSchema } from '../../shared/psp/webhook-event.js';
import { DomainError } from '../../shared/domain/errors.js';
import { handleWebhook } from '../../shared/usecases/payments.js';
import { logger } from '../../shared/logger.js';
import { z } from 'zod';
import { pspSignatureHeader, webhookAnswer } from '../schemas/payments.js';
import type { Operation } from '../openapi/operation.js';

/** The event type as a metric label: the known ones, else `other` (the label set stays bounded). */
const typeLabel = (body: unknown): string => {
  const type = (body as { type?: unknown } | undefined)?.type;
  return typeof type === 'string' && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type) ? type : 'other';
};

export function paymentRoutes(deps: ApiDeps) {
  const router = new Router<ApiState>();
  router.post('/payments/webhook', async (ctx) => {
    // The signature covers the body's bytes exactly as received (a BOM, CRLF, trailing whitespace, bytes that are not
    // UTF-8) and is checked before the body is decoded or judged: a validly signed body that is not UTF-8 is 400.
    const raw = ctx.state.rawBytes ?? Buffer.alloc(0);
    const now = Math.floor(deps.clock.now().getTime() / 1000);
    if (!verifyWebhookSignature(deps.config.PAYMENT_WEBHOOK_SECRET, header(ctx, 'psp-signature'), raw, now)) {
      deps.metrics.webhooks.inc({ type: 'unverified', outcome: 'invalid_signature' });
      throw new DomainError('INVALID_SIGNATURE', 'webhook signature missing, wrong, or outside 300 s');
    }
    const type = typeLabel(ctx.state.body);
    let outcome = 'error';
    try {
      const e = parse(webhookEventSchema, jsonBody(ctx.state), 'body');
      outcome = await handleWebhook(deps, { ...e, created: e.created ?? now });
      logger.info({ eventId: e.id, type: e.type, reference: e.data.reference, outcome }, 'webhook applied');
    } catch (err) {
      if (err instanceof DomainError && err.code === 'VALIDATION') outcome = 'invalid';
      throw err;
    } finally {
      deps.metrics.webhooks.inc({ type, outcome });
    }
    ctx.body = { received: true };
  });
  return router;
}

export const paymentOperations: Operation[] = [
  {
    operationId: 'paymentWebhook', method: 'post', path: '/payments/webhook', tag: 'payments', auth: 'public',
    summary: "The payment provider's events",
    description: 'Authenticated by its signature only. Every validly signed event is acknowledged (duplicates, unknown types and '
      + 'unknown references too); its effect is committed before the answer. A signed body that is not a well-formed event is 400.',
    headers: z.object({ 'Psp-Signature': pspSignatureHeader }),
    body: webhookEventSchema,
    answer: { status: 200, description: 'Received', schema: webhookAnswer },
    errors: ['INVALID_SIGNATURE'],
  },
];
