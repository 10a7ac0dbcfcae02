import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from '../db/pool.js';
import { insertOutboxEvent, type RowEventDraft } from '../db/outbox.js';
import { messageKeyOf, type EventPayload } from './payloads.js';
import { isNotified, type EventType } from './topics.js';
import { notificationBody } from './notifications.js';
import { insertNotifications } from '../db/notifications.js';
import { currentCorrelation } from '../correlation.js';

/**
 * Writes an event of `type` in the caller's transaction (so it exists exactly when the change it
 * describes does); the outbox pump relays it to Kafka. The row carries the request id of the
 * work writing it (shared/correlation.ts). A notified event also writes its notifications (sms, push) here,
 * in the same transaction: the notifications worker sends them from PostgreSQL. Returns the event id.
 */
export async function writeEvent<T extends EventType>(
  tx: CommonQueryMethods,
  type: T,
  occurredAt: Date,
  payload: EventPayload<T>,
): Promise<string> {
  const eventId = randomUUID();
  const correlation = currentCorrelation();
  await insertOutboxEvent(tx, {
    eventId, topic: type, key: String(messageKeyOf(type, payload)),
    payload: { eventId, type, occurredAt: occurredAt.toISOString(), ...payload },
    requestId: correlation?.requestId ?? null, traceparent: correlation?.traceparent ?? null,
  });
  const bookingId = (payload as { bookingId?: unknown }).bookingId;
  if (isNotified(type) && typeof bookingId === 'number') {
    await insertNotifications(tx, { eventId, eventType: type, bookingId, body: notificationBody[type](bookingId) });
  }
  return eventId;
}

type CarHeld = Extract<EventPayload<'booking.held'>, { kind: 'car' }>;
/** booking.held of a car hold, but for what the hold's INSERT decides: the booking id and the car's prices. */
export type CarHeldDraft = Omit<CarHeld, 'bookingId' | 'depositAmount' | 'totalAmount' | 'currency'>;

/**
 * booking.held for a car hold written by the same statement as the booking (insertCarHoldWithEvent), which
 * adds the fields the new row decides; its message key is the booking id, as messageKeyOf says. Like
 * writeEvent, it carries the request id of the work writing it.
 */
export function draftCarHeld(occurredAt: Date, payload: CarHeldDraft): RowEventDraft {
  const eventId = randomUUID();
  const correlation = currentCorrelation();
  return {
    eventId, topic: 'booking.held', payload: { eventId, type: 'booking.held', occurredAt: occurredAt.toISOString(), ...payload },
    requestId: correlation?.requestId ?? null, traceparent: correlation?.traceparent ?? null,
  };
}
