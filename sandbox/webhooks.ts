import type { Logger } from 'pino';
import { signWebhook } from '../shared/psp/signature.js';
import type { SentWebhookEvent, WebhookEventType } from '../shared/psp/webhook-event.js';
import type { Background } from './background.js';
import { newId, nowS, type SandboxFaults, type SandboxIntent, type SandboxRefund, type SandboxState, type SentWebhook } from './state.js';

export interface WebhookOptions {
  webhookSecret: string;
  /** Deliveries of one copy before giving up, with backoff `backoffMs` doubling. */
  attempts: number;
  backoffMs: number;
}

/** Signs and POSTs events to `settings.webhookUrl`, with the faults asked for (delay, duplicates, order). */
export function createWebhooks(
  state: SandboxState,
  faults: SandboxFaults,
  settings: { webhookUrl: string },
  background: Background,
  options: WebhookOptions,
  log: Logger,
) {
  async function deliverCopy(sent: SentWebhook): Promise<void> {
    const body = JSON.stringify(sent.event);
    for (let attempt = 0; attempt < options.attempts; attempt++) {
      if (attempt > 0) await background.sleep(options.backoffMs * 2 ** (attempt - 1));
      sent.attempts++;
      try {
        const res = await fetch(settings.webhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'psp-signature': signWebhook(options.webhookSecret, body, nowS()) },
          body,
          signal: AbortSignal.any([background.signal, AbortSignal.timeout(5_000)]),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) {
          sent.delivered++;
          return;
        }
        sent.lastError = `HTTP ${res.status}`;
      } catch (e) {
        if (background.signal.aborted) return;
        sent.lastError = e instanceof Error ? e.message : String(e);
      }
    }
    log.warn({ eventId: sent.event.id, type: sent.event.type, lastError: sent.lastError }, 'webhook delivery gave up');
  }

  async function deliver(sent: SentWebhook, copies: number): Promise<void> {
    if (Math.random() < faults.webhookLossRate) {
      sent.lost = true;
      return;
    }
    const delay = faults.webhookDelayMs + Math.floor(Math.random() * faults.webhookJitterMs);
    if (delay > 0) await background.sleep(delay);
    // Copies go out concurrently: the harshest case for the receiver's deduplication.
    await Promise.all(Array.from({ length: copies }, () => deliverCopy(sent)));
  }

  return {
    /** Events of one batch are delivered one after another, reversed when asked to. */
    dispatch(batch: SentWebhookEvent[], reverse = faults.outOfOrder): void {
      const ordered = reverse ? [...batch].reverse() : batch;
      const sent = ordered.map((event) => ({ event, attempts: 0, delivered: 0, lastError: null }));
      state.webhooks.push(...sent);
      const copies = 1 + faults.duplicateDeliveries;
      background.track((async () => {
        for (const s of sent) await deliver(s, copies);
      })());
    },

    /** Sends an event already sent once more, as a new delivery. */
    replay(event: SentWebhookEvent): void {
      const sent: SentWebhook = { event, attempts: 0, delivered: 0, lastError: null };
      state.webhooks.push(sent);
      background.track(deliver(sent, 1));
    },

    intentEvent(type: WebhookEventType, intent: SandboxIntent, amount = intent.amount): SentWebhookEvent {
      const providerTxnId = type === 'payment_intent.succeeded' ? intent.providerTxnId : null;
      const { id: paymentIntentId, reference, currency } = intent;
      return { id: newId('evt'), type, created: nowS(), data: { paymentIntentId, reference, amount, currency, providerTxnId } };
    },

    refundEvent(refund: SandboxRefund): SentWebhookEvent {
      const type = refund.status === 'failed' ? 'refund.failed' : 'refund.succeeded';
      const { paymentIntentId, reference, amount, currency } = refund;
      const providerTxnId = state.intents.get(paymentIntentId)?.providerTxnId ?? null;
      const data = { paymentIntentId, reference, amount, currency, providerTxnId, refundId: refund.id };
      return { id: newId('evt'), type, created: nowS(), data };
    },
  };
}
export type Webhooks = ReturnType<typeof createWebhooks>;
