-- Up Migration
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE car (
  id                 bigserial PRIMARY KEY,
  host_id            bigint      NOT NULL CHECK (host_id > 0),
  plate              text        NOT NULL UNIQUE,
  model              text        NOT NULL,
  city               text        NOT NULL,
  daily_price        bigint      NOT NULL CHECK (daily_price >= 0),
  deposit_amount     bigint      NOT NULL CHECK (deposit_amount >= 0),
  currency           text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  turnaround_minutes integer     NOT NULL CHECK (turnaround_minutes BETWEEN 0 AND 10080),
  created_at         timestamptz NOT NULL DEFAULT now()
);
-- Search: equality on city, ordered by price then id.
CREATE INDEX car_city_price_idx ON car (city, daily_price, id);

CREATE TABLE booking (
  id                   bigserial PRIMARY KEY,
  kind                 text        NOT NULL CHECK (kind IN ('car', 'stay')),
  status               text        NOT NULL CHECK (status IN ('HOLD','CONFIRMED','ON_TRIP','COMPLETED','EXPIRED','CANCELLED')),
  version              integer     NOT NULL DEFAULT 0,
  customer_id          bigint      NOT NULL,
  car_id               bigint      REFERENCES car (id),
  period               tstzrange,
  -- [from, to + turnaround): derived by trigger from the car, never by application code.
  blocked              tstzrange,
  room_type_id         bigint,
  check_in             date,
  check_out            date,
  rooms                integer,
  deposit_amount       bigint      NOT NULL CHECK (deposit_amount >= 0),
  currency             text        NOT NULL,
  hold_expires_at      timestamptz,
  next_expiry_check_at timestamptz,
  pay_requested_at     timestamptz,
  payment_intent_id    text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT booking_car_shape CHECK (kind <> 'car' OR (car_id IS NOT NULL AND period IS NOT NULL AND NOT isempty(period))),
  CONSTRAINT booking_stay_shape CHECK (kind <> 'stay' OR (room_type_id IS NOT NULL AND check_in < check_out AND rooms > 0)),
  CONSTRAINT booking_hold_expiry CHECK ((status = 'HOLD') = (hold_expires_at IS NOT NULL)),
  CONSTRAINT booking_car_no_overlap EXCLUDE USING gist (car_id WITH =, blocked WITH &&)
    WHERE (kind = 'car' AND status IN ('HOLD', 'CONFIRMED', 'ON_TRIP'))
);
CREATE INDEX booking_customer_idx ON booking (customer_id);
CREATE INDEX booking_hold_due_idx ON booking (next_expiry_check_at) WHERE status = 'HOLD';

CREATE FUNCTION booking_derive_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.kind = 'car' THEN
    SELECT tstzrange(lower(NEW.period), upper(NEW.period) + make_interval(mins => c.turnaround_minutes), '[)')
      INTO NEW.blocked
      FROM car c WHERE c.id = NEW.car_id;
  ELSE
    NEW.blocked := NULL;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER booking_derive_blocked BEFORE INSERT OR UPDATE OF period, car_id, kind ON booking
  FOR EACH ROW EXECUTE FUNCTION booking_derive_blocked();

CREATE TABLE idempotency_key (
  customer_id     bigint      NOT NULL,
  key             text        NOT NULL,
  request_hash    text        NOT NULL,
  state           text        NOT NULL CHECK (state IN ('IN_PROGRESS', 'DONE')),
  response_status integer,
  response_body   jsonb,
  locked_until    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (customer_id, key)
);
CREATE INDEX idempotency_key_created_idx ON idempotency_key (created_at);

CREATE TABLE outbox (
  id            bigserial   PRIMARY KEY,
  event_id      uuid        NOT NULL UNIQUE,
  topic         text        NOT NULL,
  message_key   text        NOT NULL,
  payload       jsonb       NOT NULL,
  -- Relays own a shard at a time, so events of one key are published in id order.
  shard         smallint    NOT NULL GENERATED ALWAYS AS (hashtext(message_key) & 7) STORED,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  published_at  timestamptz,
  dispatched_at timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (shard, id) WHERE published_at IS NULL;
CREATE INDEX outbox_undispatched_idx ON outbox (id) WHERE dispatched_at IS NULL;

CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox', '');
  RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Down Migration
DROP TABLE outbox;
DROP FUNCTION outbox_notify();
DROP TABLE idempotency_key;
DROP TABLE booking;
DROP FUNCTION booking_derive_blocked();
DROP TABLE car;
