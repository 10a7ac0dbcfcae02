import { NOTIFIED_EVENTS, NOTIFY_CHANNELS } from '../../shared/events/topics.js';
import type { Invariant, NotifyDelivery } from './types.js';

/** How the receiver tells deliveries apart: the Idempotency-Key header when sent, else event id + channel. */
export const deliveryKey = (d: NotifyDelivery) => d.idempotencyKey || `${d.eventId}:${d.channel}`;

/**
 * Each notified event (booking.confirmed, booking.expired, booking.cancelled, refund.succeeded in the outbox) went
 * out exactly once per channel (sms, push): counted in the receiver's log when given (NOTIFY_LOG), else in the
 * `notification` table (which can only show missing ones).
 */
export const notificationsOnce: Invariant = {
  name: 'notifications-once',
  async check({ query, notifyLog }) {
    const events = await query<{ eventId: string; topic: string }>(`
      SELECT event_id::text AS "eventId", topic FROM outbox WHERE topic = ANY($1::text[]) ORDER BY id`, [[...NOTIFIED_EVENTS]]);
    const counts = new Map<string, number>();
    if (notifyLog) {
      for (const d of notifyLog) counts.set(deliveryKey(d), (counts.get(deliveryKey(d)) ?? 0) + 1);
    } else {
      const sent = await query<{ eventId: string; channel: string }>(`SELECT event_id::text AS "eventId", channel FROM notification`);
      for (const s of sent) counts.set(`${s.eventId}:${s.channel}`, 1);
    }
    // An Idempotency-Key other than event:channel is matched on the body's ids too.
    const byIds = new Map<string, number>();
    if (notifyLog) for (const d of notifyLog) byIds.set(`${d.eventId}:${d.channel}`, (byIds.get(`${d.eventId}:${d.channel}`) ?? 0) + 1);
    const violations: string[] = [];
    for (const e of events) {
      for (const channel of NOTIFY_CHANNELS) {
        const key = `${e.eventId}:${channel}`;
        const n = Math.max(counts.get(key) ?? 0, byIds.get(key) ?? 0);
        if (n !== 1) violations.push(`${e.topic} ${e.eventId} ${channel}: sent ${n} times`);
      }
    }
    return {
      checked: events.length * NOTIFY_CHANNELS.length,
      violations,
      note: notifyLog ? `${notifyLog.length} deliveries in the receiver's log` : 'no receiver log: notification table only',
    };
  },
};
