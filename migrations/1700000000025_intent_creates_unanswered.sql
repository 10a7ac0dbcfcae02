-- Up Migration

-- An intent create that /pay sent and the provider never answered (a timeout, a reset): the provider may still
-- carry it out, later, when the booking has left HOLD and its intent cancellation has found nothing to cancel.
-- The cancellation sends the create again with the same Idempotency-Key and body (the provider answers with the
-- intent it made, or makes it now, and a late original then gets that intent back) and cancels what it gets, so
-- no intent of the booking stays payable (shared/usecases/intent-cancellations.ts).
CREATE TABLE intent_create_unanswered (
  booking_id      bigint      NOT NULL REFERENCES booking (id),
  idempotency_key text        NOT NULL,
  amount          bigint      NOT NULL CHECK (amount >= 0),
  currency        text        NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (booking_id, idempotency_key)
);

-- Down Migration
DROP TABLE intent_create_unanswered;
