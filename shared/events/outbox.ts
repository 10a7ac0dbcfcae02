import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from '../db/pool.js';
import { insertOutboxEvent, type RowEventDraft } from '../db/outbox.js';
import { messageKeyOf, type EventPayload } from './payloads.js';
import type { EventType } from './topics.js';
import { currentCorrelation } from '../correlation.js';

/**
 * Writes an event of `type` in the caller's transaction (so it exists exactly when the change it describes does);
 * the outbox pump relays it to Kafka. The row carries the request id of the work writing it (shared/correlation.ts).
 * It writes the event only: a notified transition calls the `notify` effect (shared/usecases/effects/notify.ts)
 * with the returned event id. Returns the event id.
 */
export async function writeEvent<T extends EventType>(
  tx: CommonQueryMethods,
  type: T,
  occurredAt: Date,
  payload: EventPayload<T>,
): Promise<string> {
  const draft = draftEvent(type, occurredAt, payload);
  await insertOutboxEvent(tx, { ...draft, key: String(messageKeyOf(type, payload)) });
  return draft.eventId;
}

/** The envelope every event gets: a new id, the type, when, the payload, and the request it belongs to. */
function draftEvent(type: EventType, occurredAt: Date, payload: object): RowEventDraft {
  const eventId = randomUUID();
  const correlation = currentCorrelation();
  return {
    eventId, topic: type, payload: { eventId, type, occurredAt: occurredAt.toISOString(), ...payload },
    requestId: correlation?.requestId ?? null, traceparent: correlation?.traceparent ?? null,
  };
}

type CarHeld = Extract<EventPayload<'booking.held'>, { kind: 'car' }>;
/** booking.held of a car hold, but for what the hold's INSERT decides: the booking id and the car's prices. */
export type CarHeldDraft = Omit<CarHeld, 'bookingId' | 'depositAmount' | 'totalAmount' | 'currency'>;

/**
 * booking.held for a car hold written by the same statement as the booking (insertCarHoldWithEvent), which
 * adds the fields the new row decides; its message key is the booking id, as messageKeyOf says.
 */
export const draftCarHeld = (occurredAt: Date, payload: CarHeldDraft): RowEventDraft => draftEvent('booking.held', occurredAt, payload);
