import { createHmac, randomUUID } from 'node:crypto';
import type { Harness } from './harness.js';
import type { Reply } from './http.js';

/** The one way tests build and send provider webhooks. */

const uid = () => randomUUID().replace(/-/g, '').slice(0, 16);
const nowS = () => Math.floor(Date.now() / 1000);

/** `t=<unix s>,v1=<hex HMAC-SHA256(secret, "t.body")>`, computed here, independently of shared/psp/signature.ts. */
export function pspSignature(secret: string, rawBody: string, t = nowS()): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex')}`;
}

/**
 * POSTs `body` (or `raw`) to the webhook, signed with the harness secret (overridable) at `t` (unix seconds,
 * default real time; pass the server's clock when it is pinned). `signature: null` sends no header.
 */
export function signedWebhook(
  h: Harness,
  body: unknown,
  opts: { t?: number; secret?: string; raw?: string; signature?: string | null } = {},
): Promise<Reply> {
  const raw = opts.raw ?? JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const t = opts.t === undefined ? undefined : Math.floor(opts.t);
  const signature = opts.signature === undefined ? pspSignature(opts.secret ?? h.config.PAYMENT_WEBHOOK_SECRET, raw, t) : opts.signature;
  if (signature !== null) headers['psp-signature'] = signature;
  return h.req('POST', '/payments/webhook', { raw, headers });
}

export interface SuccessOpts {
  id?: string;
  txn?: string;
  intent?: string;
  currency?: string;
  type?: string;
}

/** A provider `payment_intent.succeeded` event (or another `type`) for booking `bookingId`; fresh ids unless given. */
export function paymentSucceeded(bookingId: number | string, amount: number, o: SuccessOpts = {}) {
  return {
    id: o.id ?? `evt_${uid()}`,
    type: o.type ?? 'payment_intent.succeeded',
    created: nowS(),
    data: {
      paymentIntentId: o.intent ?? `pi_${uid()}`,
      reference: String(bookingId),
      amount,
      currency: o.currency ?? 'VND',
      providerTxnId: o.txn ?? `txn_${uid()}`,
    },
  };
}

export type WebhookBody = ReturnType<typeof paymentSucceeded>;
