import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { refundStatuses, type PaymentIntent, type Refund } from '../shared/psp/client.js';
import type { SentWebhookEvent } from '../shared/psp/webhook-event.js';
import type { IdempotencyKeys } from './http.js';
import { answerRuleSchema } from './fault-rules.js';

// What the sandbox provider remembers (in memory) and the faults it can be told to inject.

export type SandboxIntent = PaymentIntent & { providerTxnId: string | null };
export type SandboxRefund = Refund & { paymentIntentId: string; reference: string; currency: string };
export interface SentWebhook {
  event: SentWebhookEvent;
  attempts: number;
  delivered: number;
  lastError: string | null;
  /** Dropped on purpose (the `webhookLossRate` fault): never delivered. */
  lost?: boolean;
}
/** The last calls the /v1 API received (every one, refused or not), for tests that count the provider's load. */
export interface CallLog {
  record(endpoint: string): void;
  list(): readonly { at: number; endpoint: string }[];
}

export function callLog(max = 10_000): CallLog {
  let calls: { at: number; endpoint: string }[] = [];
  return {
    record(endpoint) {
      calls.push({ at: Date.now(), endpoint });
      if (calls.length > max * 1.5) calls = calls.slice(-max);
    },
    list: () => calls.slice(-max),
  };
}

export interface SandboxState {
  intents: Map<string, SandboxIntent>;
  refunds: SandboxRefund[];
  webhooks: SentWebhook[];
  /** Idempotency-Key → object, per key space; POST /sandbox/idempotency-keys/forget empties them (Stripe forgets after 24 h). */
  idempotencyKeys: { intents: IdempotencyKeys; refunds: IdempotencyKeys };
  calls: CallLog;
}

export const faultsSchema = z.object({
  duplicateDeliveries: z.number().int().min(0).max(20),
  webhookDelayMs: z.number().int().min(0),
  outOfOrder: z.boolean(),
  processingFirstMs: z.number().int().min(0),
  apiDelayMs: z.number().int().min(0),
  apiFailRate: z.number().min(0).max(1),
  apiDown: z.boolean(),
  refundOutcome: z.enum(refundStatuses),
  refundSettleMs: z.number().int().min(0),
  /** Fraction of webhook events never delivered (lost). */
  webhookLossRate: z.number().min(0).max(1),
  /** Each event waits a random 0..webhookJitterMs before delivery: events of different batches arrive reordered. */
  webhookJitterMs: z.number().int().min(0).max(600_000),
  /** Per-endpoint injected answers (sandbox/fault-rules.ts). */
  answers: z.array(answerRuleSchema),
  /** GET /v1/payment_intents?reference= answers intents without their providerTxnId. */
  listWithoutTxnId: z.boolean(),
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
  webhookLossRate: 0,
  webhookJitterMs: 0,
  answers: [],
  listWithoutTxnId: false,
});

export const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
export const nowS = () => Math.floor(Date.now() / 1000);

export const findRefund = (state: SandboxState, id: string): SandboxRefund | undefined => state.refunds.find((r) => r.id === id);
