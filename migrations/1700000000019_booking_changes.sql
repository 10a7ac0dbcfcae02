-- Up Migration
-- Changing a booking (POST /bookings/{id}/change). A HOLD whose deposit changes gets a new payment intent for the
-- new amount (provider idempotency key deposit-{id}-v{n}, n = deposit_version), and every intent made for an
-- earlier deposit is superseded: cancelled at the provider, and a success for it is refunded in full even when its
-- amount happens to equal the deposit again. A constant default: no table rewrite.
ALTER TABLE booking ADD COLUMN deposit_version integer NOT NULL DEFAULT 0 CHECK (deposit_version >= 0);

-- The intents the service knew (booking.payment_intent_id) when a change superseded them, or that it created for a
-- deposit a change had already replaced (GET /pay racing the change). Written in the transaction that supersedes.
CREATE TABLE superseded_intent (
  booking_id        bigint      NOT NULL REFERENCES booking (id),
  payment_intent_id text        NOT NULL,
  deposit_version   integer     NOT NULL,
  superseded_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (booking_id, payment_intent_id)
);

-- Down Migration
DROP TABLE superseded_intent;
ALTER TABLE booking DROP COLUMN deposit_version;
