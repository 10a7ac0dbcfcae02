import type { DatabasePool } from '../db/pool.js';
import { findBooking } from '../db/bookings.js';
import { recordDelivery } from '../db/notifications.js';
import { isNotified, type Channel, type EventType, type NotifiedEvent } from '../events/topics.js';

export interface Notification {
  eventId: string;
  eventType: string;
  bookingId: number;
  channel: Channel;
  recipient: number;
  body: string;
}

/** Where sms and push messages go. The default records them and can forward them to a webhook. */
export interface NotificationProvider {
  send(n: Notification): Promise<void>;
}

export function webhookNotificationProvider(url: string | undefined, timeoutMs = 3000): NotificationProvider {
  return {
    async send(n) {
      if (!url) return;
      const res = await fetch(url, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(n),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`notify webhook answered ${res.status}`);
    },
  };
}

const messages: Record<NotifiedEvent, (id: number) => string> = {
  'booking.confirmed': (id) => `Booking ${id} is confirmed.`,
  'booking.expired': (id) => `Your hold ${id} expired before payment.`,
  'booking.cancelled': (id) => `Booking ${id} was cancelled.`,
  'refund.succeeded': (id) => `Your refund for booking ${id} was paid.`,
};

/**
 * Sends one notification at most once per (event, channel): the delivery row and the send share a
 * transaction, so a duplicate event finds the row and sends nothing.
 */
export async function deliverNotification(
  db: DatabasePool,
  provider: NotificationProvider,
  job: { eventId: string; eventType: EventType; bookingId: number; channel: Channel },
): Promise<'sent' | 'duplicate' | 'unknown_booking'> {
  const booking = await findBooking(db, job.bookingId);
  if (!booking) return 'unknown_booking';
  const n: Notification = {
    ...job, recipient: booking.customerId, body: isNotified(job.eventType) ? messages[job.eventType](job.bookingId) : job.eventType,
  };
  return db.transaction(async (tx) => {
    if (!(await recordDelivery(tx, n))) return 'duplicate';
    await provider.send(n);
    return 'sent';
  });
}
