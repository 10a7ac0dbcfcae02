-- Up Migration

-- Every intent create /pay sends, written before it is sent (its Idempotency-Key and body), and when the provider
-- answered, with the intent it answered (null when it refused). A create not answered (a timeout, a reset, a crash of the
-- API in between): the provider may carry it out later, when the booking has left HOLD and its intent cancellation
-- has found nothing to cancel. The cancellation sends such a create again with the same key and body (the provider
-- answers with the intent it made, or makes it now, and a late original then gets that intent back), records the
-- intent, and cancels it (shared/usecases/intent-cancellations.ts).
CREATE TABLE intent_create (
  booking_id      bigint      NOT NULL REFERENCES booking (id),
  idempotency_key text        NOT NULL,
  amount          bigint      NOT NULL CHECK (amount >= 0),
  currency        text        NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  answered_at     timestamptz,
  intent_id       text,
  PRIMARY KEY (booking_id, idempotency_key)
);

-- Down Migration
DROP TABLE intent_create;
