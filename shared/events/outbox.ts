import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from '../db/pool.js';
import { insertOutboxEvent } from '../db/outbox.js';
import { messageKeyOf, type EventPayload } from './payloads.js';
import type { EventType } from './topics.js';
import { currentCorrelation } from '../correlation.js';

/**
 * Writes an event of `type` in the caller's transaction (so it exists exactly when the change it
 * describes does); the dispatcher and the relay take it from there. The row carries the request id of
 * the work writing it (shared/correlation.ts). Returns the event id.
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
  return eventId;
}
