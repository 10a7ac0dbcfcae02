import type { Background } from './background.js';
import type { Webhooks } from './webhooks.js';
import type { SentWebhookEvent } from '../shared/psp/webhook-event.js';
import { newId, type SandboxFaults, type SandboxIntent, type SandboxRefund } from './state.js';

/** How intents and refunds change state, and the webhooks each change sends. */
export function createTransitions(faults: SandboxFaults, webhooks: Webhooks, background: Background) {
  function settleSucceeded(intent: SandboxIntent, amount?: number): SentWebhookEvent {
    intent.status = 'succeeded';
    intent.providerTxnId ??= newId('txn');
    return webhooks.intentEvent('payment_intent.succeeded', intent, amount);
  }

  function succeed(intent: SandboxIntent, amount?: number): void {
    if (faults.processingFirstMs <= 0) return webhooks.dispatch([settleSucceeded(intent, amount)]);
    intent.status = 'processing';
    const processing = webhooks.intentEvent('payment_intent.processing', intent, amount);
    const reverse = faults.outOfOrder;
    // Out of order: hold the processing event back so it lands after the success.
    if (!reverse) webhooks.dispatch([processing], false);
    background.later(faults.processingFirstMs, () => {
      if (intent.status !== 'processing') return reverse ? webhooks.dispatch([processing], false) : undefined;
      webhooks.dispatch(reverse ? [processing, settleSucceeded(intent, amount)] : [settleSucceeded(intent, amount)], reverse);
    });
  }

  function fail(intent: SandboxIntent, amount?: number): void {
    intent.status = 'failed';
    webhooks.dispatch([webhooks.intentEvent('payment_intent.payment_failed', intent, amount)]);
  }

  function markProcessing(intent: SandboxIntent, amount?: number): void {
    intent.status = 'processing';
    webhooks.dispatch([webhooks.intentEvent('payment_intent.processing', intent, amount)]);
  }

  function settleRefund(refund: SandboxRefund, status: 'succeeded' | 'failed'): void {
    refund.status = status;
    webhooks.dispatch([webhooks.refundEvent(refund)]);
  }

  /** A new refund takes the outcome the faults say; `pending` settles as succeeded after refundSettleMs. */
  function refundCreated(refund: SandboxRefund): void {
    if (refund.status === 'pending') {
      background.later(faults.refundSettleMs, () => refund.status === 'pending' && settleRefund(refund, 'succeeded'));
    } else {
      webhooks.dispatch([webhooks.refundEvent(refund)]);
    }
  }

  /** Cancelled: a processing payment waiting to settle (see `succeed`) no longer does. */
  function cancel(intent: SandboxIntent): void {
    intent.status = 'canceled';
  }

  return { settleSucceeded, succeed, fail, markProcessing, settleRefund, refundCreated, cancel };
}
export type Transitions = ReturnType<typeof createTransitions>;
