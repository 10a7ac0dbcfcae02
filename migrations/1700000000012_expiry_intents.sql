-- Up Migration

-- A payment is found by its booking and payment intent as well as by its providerTxnId: the expiry's and the intent
-- cancellation's question to the provider may learn of a success before its webhook, from a list answer without
-- the transaction id (it stays null until a webhook brings it). Not unique: the contract makes effects happen once
-- per providerTxnId, and a provider may settle a second, distinct transaction on one intent (or two bookings may
-- reference one foreign intent) — each must still confirm or be refunded (shared/db/payments.ts).
ALTER TABLE payment ALTER COLUMN provider_txn_id DROP NOT NULL;
UPDATE payment SET provider_txn_id = NULL WHERE provider_txn_id LIKE 'intent:%';
CREATE INDEX payment_booking_intent_idx ON payment (booking_id, payment_intent_id);

-- A durable obligation, written in the transaction that moves a booking out of HOLD unpaid (EXPIRED, CANCELLED)
-- after a payment was asked for: cancel every intent of the booking at the provider. Worked by the expiry
-- process's due loop (claim FOR UPDATE SKIP LOCKED, lease = next_attempt_at pushed forward), retried with
-- capped backoff until the provider has answered for every intent; done_at marks it settled.
CREATE TABLE intent_cancellation (
  booking_id      bigint      PRIMARY KEY REFERENCES booking (id),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  attempts        integer     NOT NULL DEFAULT 0,
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  done_at         timestamptz
);
CREATE INDEX intent_cancellation_due_idx ON intent_cancellation (next_attempt_at) WHERE done_at IS NULL;

-- Down Migration
DROP TABLE intent_cancellation;
DROP INDEX payment_booking_intent_idx;
UPDATE payment SET provider_txn_id = 'intent:' || payment_intent_id WHERE provider_txn_id IS NULL;
ALTER TABLE payment ALTER COLUMN provider_txn_id SET NOT NULL;
