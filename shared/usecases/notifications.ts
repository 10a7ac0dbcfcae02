import type { DatabasePool } from '../db/pool.js';
import { claimDueNotifications, markNotificationSent, releaseNotification, type ClaimedNotification } from '../db/notifications.js';
import type { Channel } from '../events/topics.js';

export interface Notification {
  eventId: string;
  eventType: string;
  bookingId: number;
  channel: Channel;
  recipient: number;
  body: string;
}

/** Where sms and push messages go. The default forwards them to a webhook (none configured: nothing to send). */
export interface NotificationProvider {
  /** `idempotencyKey` is `{eventId}:{channel}`: the same for every resend of one notification. */
  send(n: Notification, idempotencyKey: string): Promise<void>;
}

export function webhookNotificationProvider(url: string | undefined, timeoutMs = 3000): NotificationProvider {
  return {
    async send(n, idempotencyKey) {
      if (!url) return;
      const res = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey }, body: JSON.stringify(n),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`notify webhook answered ${res.status}`);
    },
  };
}

/** A claim outlives any send (3 s timeout) by far: past it, the row is due again (its process died mid-send). */
export const NOTIFICATION_LEASE_S = 30;
/** 1 s after the first failed send, doubling, capped at 1 h. */
export const notificationRetryDelaySeconds = (attempts: number) => Math.min(3600, 2 ** Math.max(0, attempts - 1));

export const notificationKey = (n: { eventId: string; channel: string }) => `${n.eventId}:${n.channel}`;

/**
 * Sends one claimed notification and marks it sent. Once per (event, channel): the row is unique, only its
 * claim's owner sends it, and it is marked sent right after the gateway accepts it. A process killed between the
 * two sends it again after the lease, with the same Idempotency-Key, so the gateway can drop the repeat.
 */
export async function deliverNotification(db: DatabasePool, provider: NotificationProvider, c: ClaimedNotification): Promise<'sent' | 'retry'> {
  const { eventId, eventType, bookingId, channel, recipient, body } = c;
  try {
    await provider.send({ eventId, eventType, bookingId, channel, recipient, body }, notificationKey(c));
  } catch (e) {
    await releaseNotification(db, c, String((e as Error)?.message ?? e).slice(0, 500), notificationRetryDelaySeconds(c.attempts));
    return 'retry';
  }
  await markNotificationSent(db, c);
  return 'sent';
}

export const claimNotifications = (db: DatabasePool, limit: number) => claimDueNotifications(db, limit, NOTIFICATION_LEASE_S);
