import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export interface DeliveryRecord {
  eventId: string;
  channel: string;
  bookingId: number;
  eventType: string;
  recipient: number;
  body: string;
}

/** Records a delivery; false when this (event, channel) was delivered before. */
export async function recordDelivery(db: CommonQueryMethods, n: DeliveryRecord): Promise<boolean> {
  const inserted = await db.maybeOne(sql.type(z.object({ one: z.number() }))`
    INSERT INTO notification (event_id, channel, booking_id, event_type, recipient, body)
    VALUES (${n.eventId}, ${n.channel}, ${n.bookingId}, ${n.eventType}, ${n.recipient}, ${n.body})
    ON CONFLICT DO NOTHING RETURNING 1 AS one`);
  return inserted !== null;
}
