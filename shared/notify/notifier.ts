import type { Config } from '../config.js';
import type { Channel, Delivery } from '../domain/notifications.js';
import { logger } from '../logger.js';

// Where sms and push go (CONTRACT "Events", NOTIFY_WEBHOOK_URL): POSTed to the URL with Idempotency-Key
// {eventId}:{channel}; with `none` sending is off and each is recorded as skipped (never as sent); unset (development
// and test only, production refuses to start) each is written to the log, one line per notification.

export interface Notification {
  eventId: string;
  eventType: string;
  bookingId: number;
  channel: Channel;
  recipient: number;
  body: string;
}

export interface Notifier {
  /** How a settled notification is recorded (notification.delivery). */
  delivery: Delivery;
  /** Delivers `n` (throws when the gateway refused or did not answer); `idempotencyKey` is the same on every resend. */
  send(n: Notification, idempotencyKey: string): Promise<void>;
}

export function webhookNotifier(url: string, timeoutMs = 3000): Notifier {
  return {
    delivery: 'webhook',
    async send(n, idempotencyKey) {
      const res = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey }, body: JSON.stringify(n),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`notify webhook answered ${res.status}`);
    },
  };
}

const skipped: Notifier = { delivery: 'skipped', send: async () => {} };
const logged: Notifier = {
  delivery: 'log',
  send: async (n, idempotencyKey) => logger.info({ notification: n, idempotencyKey }, `notification (${n.channel}) to customer ${n.recipient}: ${n.body}`),
};

const byConfig = new WeakMap<object, Notifier>();

/** The notifier NOTIFY_WEBHOOK_URL names (one per config). */
export function notifierOf(config: Pick<Config, 'NOTIFY_WEBHOOK_URL'>): Notifier {
  let n = byConfig.get(config);
  if (!n) {
    const url = config.NOTIFY_WEBHOOK_URL;
    n = url === 'none' ? skipped : url ? webhookNotifier(url) : logged;
    byConfig.set(config, n);
  }
  return n;
}
