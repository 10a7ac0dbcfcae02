import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export interface NewPayment {
  bookingId: number;
  providerTxnId: string;
  paymentIntentId: string;
  amount: number;
  currency: string;
  outcome: 'CONFIRMED' | 'REFUNDED';
}

/** Records a provider success once per providerTxnId; null when it was already recorded. */
export async function insertPayment(db: CommonQueryMethods, p: NewPayment): Promise<number | null> {
  return db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO payment (booking_id, provider_txn_id, payment_intent_id, amount, currency, outcome)
    VALUES (${p.bookingId}, ${p.providerTxnId}, ${p.paymentIntentId}, ${p.amount}, ${p.currency}, ${p.outcome})
    ON CONFLICT (provider_txn_id) DO NOTHING
    RETURNING id`);
}

export async function confirmingPayment(db: CommonQueryMethods, bookingId: number) {
  return db.maybeOne(sql.type(z.object({ id: z.number(), paymentIntentId: z.string(), amount: z.number() }))`
    SELECT id, payment_intent_id AS "paymentIntentId", amount FROM payment
    WHERE booking_id = ${bookingId} AND outcome = 'CONFIRMED'`);
}

/** Remembers a webhook event id; false when it was seen before. */
export async function recordWebhookEvent(db: CommonQueryMethods, id: string, type: string, payload: unknown): Promise<boolean> {
  const r = await db.maybeOne(sql.type(z.object({ inserted: z.literal(true) }))`
    INSERT INTO webhook_inbox (event_id, type, payload) VALUES (${id}, ${type}, ${sql.jsonb(payload as never)})
    ON CONFLICT DO NOTHING RETURNING true AS inserted`);
  return r !== null;
}
