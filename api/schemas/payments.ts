import { z } from 'zod';

/** The webhook's signature header (checked by shared/psp/signature.ts over the raw body, before the body is read). */
export const pspSignatureHeader = z.string().describe(
  '`t=<unix seconds>,v1=<hex>` with v1 = HMAC-SHA256(PAYMENT_WEBHOOK_SECRET, `${t}.${rawBody}`); |now − t| ≤ 300 s',
);

/** 200 of POST /payments/webhook: every validly signed event, duplicates and unknown types included. */
export const webhookAnswer = z.object({ received: z.literal(true) }).strict();
