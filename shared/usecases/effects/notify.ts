import type { CommonQueryMethods } from '../../db/pool.js';
import { insertNotifications } from '../../db/notifications.js';
import { notificationBody } from '../../events/notifications.js';
import type { NotifiedEvent } from '../../events/topics.js';
import { noteJob } from '../transact.js';

/**
 * The notifications of a notified event (CONTRACT "Events": sms and push, once per event and channel), in the
 * event's transaction: one row per channel, and its job once the transaction commits. Called by each notified
 * transition right after its writeEvent (booking.confirmed, booking.expired, booking.cancelled, refund.succeeded,
 * and booking.changed where changes are made).
 */
export async function notify(tx: CommonQueryMethods, event: { type: NotifiedEvent; eventId: string; bookingId: number }): Promise<void> {
  const written = await insertNotifications(tx, {
    eventId: event.eventId, eventType: event.type, bookingId: event.bookingId, body: notificationBody[event.type](event.bookingId),
  });
  for (const n of written) noteJob(tx, { kind: 'notifications', bookingId: event.bookingId, eventId: event.eventId, channel: n.channel, gen: n.gen });
}
