import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export interface NewPayment {
  bookingId: number;
  /** Null when the success was learnt from a provider answer that did not carry it (a webhook fills it in later). */
  providerTxnId: string | null;
  paymentIntentId: string;
  amount: number;
  currency: string;
  outcome: 'CONFIRMED' | 'REFUNDED';
}

/**
 * Records a provider success once; null when it was already recorded (by the webhook or by a question to the
 * provider, whichever came first). Effects happen once per providerTxnId (the contract); a success learnt without
 * one (a provider list answer) is the same payment as any recorded for the booking and intent, and a later one that
 * knows the id fills it in there. A second, distinct transaction on the same intent is a payment of its own.
 * The caller holds the booking's row lock, so the two paths of one booking never interleave here.
 */
export async function insertPayment(db: CommonQueryMethods, p: NewPayment): Promise<number | null> {
  if (p.providerTxnId === null) {
    const known = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      SELECT id FROM payment WHERE booking_id = ${p.bookingId} AND payment_intent_id = ${p.paymentIntentId} LIMIT 1`);
    if (known !== null) return null;
  } else {
    const filled = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      UPDATE payment SET provider_txn_id = ${p.providerTxnId}
      WHERE id = (SELECT id FROM payment WHERE booking_id = ${p.bookingId} AND payment_intent_id = ${p.paymentIntentId}
                    AND provider_txn_id IS NULL ORDER BY id LIMIT 1)
        AND NOT EXISTS (SELECT 1 FROM payment WHERE provider_txn_id = ${p.providerTxnId})
      RETURNING id`);
    if (filled !== null) return null;
  }
  return db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO payment (booking_id, provider_txn_id, payment_intent_id, amount, currency, outcome)
    VALUES (${p.bookingId}, ${p.providerTxnId}, ${p.paymentIntentId}, ${p.amount}, ${p.currency}, ${p.outcome})
    ON CONFLICT DO NOTHING
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
