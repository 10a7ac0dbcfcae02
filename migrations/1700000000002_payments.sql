-- Up Migration
CREATE TABLE payment (
  id                bigserial   PRIMARY KEY,
  booking_id        bigint      NOT NULL REFERENCES booking (id),
  provider_txn_id   text        NOT NULL UNIQUE,
  payment_intent_id text        NOT NULL,
  amount            bigint      NOT NULL,
  currency          text        NOT NULL,
  -- CONFIRMED: this payment confirmed the booking; REFUNDED: it was refunded in full on arrival.
  outcome           text        NOT NULL CHECK (outcome IN ('CONFIRMED', 'REFUNDED')),
  received_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_booking_idx ON payment (booking_id, id);
CREATE UNIQUE INDEX payment_one_confirming_idx ON payment (booking_id) WHERE outcome = 'CONFIRMED';

CREATE TABLE refund (
  id                 bigserial   PRIMARY KEY,
  booking_id         bigint      NOT NULL REFERENCES booking (id),
  payment_id         bigint      REFERENCES payment (id),
  payment_intent_id  text        NOT NULL,
  amount             bigint      NOT NULL CHECK (amount > 0),
  currency           text        NOT NULL,
  status             text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
  reason             text        NOT NULL,
  provider_refund_id text        UNIQUE,
  attempts           integer     NOT NULL DEFAULT 0,
  last_error         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refund_booking_idx ON refund (booking_id, id);
CREATE INDEX refund_pending_idx ON refund (id) WHERE status = 'PENDING';

CREATE TABLE webhook_inbox (
  event_id    text        PRIMARY KEY,
  type        text        NOT NULL,
  payload     jsonb       NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notification (
  event_id   uuid        NOT NULL,
  channel    text        NOT NULL CHECK (channel IN ('sms', 'push')),
  booking_id bigint      NOT NULL,
  event_type text        NOT NULL,
  recipient  bigint      NOT NULL,
  body       text        NOT NULL,
  sent_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, channel)
);
CREATE INDEX notification_booking_idx ON notification (booking_id);

-- Down Migration
DROP TABLE notification;
DROP TABLE webhook_inbox;
DROP TABLE refund;
DROP TABLE payment;
