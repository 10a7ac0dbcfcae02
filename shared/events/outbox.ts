import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods } from '../db/pool.js';
import type { EventType } from './topics.js';

export interface OutboxEvent {
  type: EventType;
  /** Kafka message key: the bookingId (roomTypeId for inventory.adjusted). */
  key: number;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/** Writes the event in the caller's transaction: it exists exactly when the change it describes does. */
export async function writeEvent(db: CommonQueryMethods, event: OutboxEvent): Promise<string> {
  const eventId = randomUUID();
  const payload = { eventId, type: event.type, occurredAt: event.occurredAt.toISOString(), ...event.data };
  await db.query(sql.unsafe`
    INSERT INTO outbox (event_id, topic, message_key, payload)
    VALUES (${eventId}, ${event.type}, ${String(event.key)}, ${sql.jsonb(payload as never)})`);
  return eventId;
}
