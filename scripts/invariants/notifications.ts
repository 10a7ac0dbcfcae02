import { NOTIFIED_EVENTS } from '../../shared/events/topics.js';
import { NOTIFY_CHANNELS } from '../../shared/domain/notifications.js';
import type { Invariant, NotifyDelivery } from './types.js';

/**
 * Each notified event (booking.confirmed, booking.expired, booking.cancelled, refund.succeeded in the outbox) went
 * out exactly once per channel (sms, push). Counted in the receiver's log when given (NOTIFY_LOG): deliveries that
 * carry an Idempotency-Key count once per distinct key (a receiver honouring the key sends once), deliveries
 * without one count each. Without the log, the `notification` table is read (it can only show missing ones).
 */
export const notificationsOnce: Invariant = {
  name: 'notifications-once',
  async check({ query, notifyLog }) {
    const events = await query<{ eventId: string; topic: string }>(`
      SELECT event_id::text AS "eventId", topic FROM outbox WHERE topic = ANY($1::text[]) ORDER BY id`, [[...NOTIFIED_EVENTS]]);
    const keys = new Map<string, Set<string>>();
    const keyless = new Map<string, number>();
    const pair = (d: NotifyDelivery) => `${d.eventId}:${d.channel}`;
    if (notifyLog) {
      for (const d of notifyLog) {
        if (d.idempotencyKey) keys.set(pair(d), (keys.get(pair(d)) ?? new Set()).add(d.idempotencyKey));
        else keyless.set(pair(d), (keyless.get(pair(d)) ?? 0) + 1);
      }
    } else {
      const sent = await query<{ eventId: string; channel: string }>(`SELECT event_id::text AS "eventId", channel FROM notification WHERE sent_at IS NOT NULL`);
      for (const s of sent) keyless.set(`${s.eventId}:${s.channel}`, 1);
    }
    const violations: string[] = [];
    for (const e of events) {
      for (const channel of NOTIFY_CHANNELS) {
        const key = `${e.eventId}:${channel}`;
        const n = (keys.get(key)?.size ?? 0) + (keyless.get(key) ?? 0);
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
