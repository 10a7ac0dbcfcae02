import { z } from 'zod';
import { MAX_MONEY } from '../domain/money.js';

// The provider's webhook event: the one schema the service validates with and the sandbox provider sends.

export const WEBHOOK_EVENT_TYPES = [
  'payment_intent.succeeded',
  'payment_intent.processing',
  'payment_intent.payment_failed',
  'refund.succeeded',
  'refund.failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** No NUL (PostgreSQL's text and jsonb refuse it) and well-formed Unicode: such an id is not well-formed. */
const storable = (s: string) => !s.includes('\u0000') && !/\p{Cs}/u.test(s);
const str = z.string().min(1).max(255).refine(storable, 'no NUL or malformed Unicode');

/**
 * An event as the service accepts it (after its signature): any `type` (unknown ones are acknowledged and
 * ignored), and well-formed fields the service acts on. `providerTxnId` is null unless a payment succeeded.
 */
export const webhookEventSchema = z.object({
  id: str,
  type: str,
  created: z.number().int().optional(),
  data: z.object({
    paymentIntentId: str,
    // Any text: one that names no booking (a longer one included) is an unknown reference, acknowledged with 200.
    reference: z.string().refine(storable, 'no NUL or malformed Unicode'),
    // Money is at most 10^15 minor units (CONTRACT.md "Conventions"); no deposit the service asks for is more.
    amount: z.number().int().nonnegative().max(MAX_MONEY),
    // ISO 4217 in any case (Stripe sends `vnd`): compared without regard to case, stored in upper case.
    currency: z.string().min(1).max(8).refine(storable, 'no NUL or malformed Unicode')
      .describe("ISO 4217 in any case (`vnd` is `VND`): compared with the booking's currency without regard to case"),
    providerTxnId: str.nullable().optional().default(null),
    refundId: str.nullable().optional(),
  }),
});
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

/** An event as a provider sends it: a known type, stamped with `created` (unix seconds). */
export type SentWebhookEvent = WebhookEvent & { type: WebhookEventType; created: number };
