-- Up Migration

-- Payments are keyed on the payment intent: one succeeded payment per intent, whichever path records it first
-- (the webhook, or the expiry's / intent cancellation's question to the provider). The provider's transaction id
-- may be unknown on the second path (a list answer without it): it stays null until a webhook brings it.
-- A database that already holds two payments of one intent (the made-up `intent:{id}` transaction ids this
-- replaces) must be reconciled by hand first: the migration stops and names them.
DO $$
DECLARE dup text;
BEGIN
  SELECT string_agg(payment_intent_id, ', ') INTO dup
  FROM (SELECT payment_intent_id FROM payment GROUP BY payment_intent_id HAVING count(*) > 1) d;
  IF dup IS NOT NULL THEN
    RAISE EXCEPTION 'payments recorded twice for the intents %: reconcile them before this migration', dup;
  END IF;
END $$;
ALTER TABLE payment ALTER COLUMN provider_txn_id DROP NOT NULL;
UPDATE payment SET provider_txn_id = NULL WHERE provider_txn_id LIKE 'intent:%';
CREATE UNIQUE INDEX payment_intent_once_idx ON payment (payment_intent_id);

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
DROP INDEX payment_intent_once_idx;
UPDATE payment SET provider_txn_id = 'intent:' || payment_intent_id WHERE provider_txn_id IS NULL;
ALTER TABLE payment ALTER COLUMN provider_txn_id SET NOT NULL;
