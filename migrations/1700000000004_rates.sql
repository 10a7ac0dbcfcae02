-- Up Migration
-- Prices, restrictions and quotes: rate plans with a nightly calendar, an append-only calendar ledger,
-- quotes, and what a booking was sold at.

ALTER TABLE room_type ADD COLUMN max_guests integer NOT NULL DEFAULT 2 CHECK (max_guests BETWEEN 1 AND 100);

CREATE TABLE rate_plan (
  id           bigserial   PRIMARY KEY,
  room_type_id bigint      NOT NULL REFERENCES room_type (id),
  name         text        NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rate_plan_room_type_idx ON rate_plan (room_type_id, id);

-- One row per night that was ever set; a night without a row has the defaults (no price). The defaults live
-- in shared/domain/rates.ts only: writers always insert every column.
CREATE TABLE rate_night (
  rate_plan_id        bigint  NOT NULL REFERENCES rate_plan (id),
  night               date    NOT NULL,
  price               bigint  CHECK (price >= 0),
  min_stay            integer NOT NULL CHECK (min_stay >= 1),
  max_stay            integer NOT NULL CHECK (max_stay >= 1),
  closed_to_arrival   boolean NOT NULL,
  closed_to_departure boolean NOT NULL,
  stop_sell           boolean NOT NULL,
  PRIMARY KEY (rate_plan_id, night)
);

CREATE TABLE rate_ledger (
  id           bigserial   PRIMARY KEY,
  rate_plan_id bigint      NOT NULL,
  night        date        NOT NULL,
  at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor        text        NOT NULL,
  reason       text        NOT NULL,
  -- null: the night had never been set (it had the defaults)
  before       jsonb,
  after        jsonb       NOT NULL
);
CREATE INDEX rate_ledger_night_idx ON rate_ledger (rate_plan_id, night, id);

CREATE FUNCTION rate_night_json(n rate_night) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('price', n.price, 'minStay', n.min_stay, 'maxStay', n.max_stay,
    'closedToArrival', n.closed_to_arrival, 'closedToDeparture', n.closed_to_departure, 'stopSell', n.stop_sell)
$$;

-- Every calendar change is attributed like an inventory change (booking.actor / booking.reason set by the
-- use case for its transaction) and recorded in the same transaction; a change without them is refused.
CREATE FUNCTION rate_night_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  actor  text := nullif(current_setting('booking.actor', true), '');
  reason text := nullif(current_setting('booking.reason', true), '');
BEGIN
  IF actor IS NULL OR reason IS NULL THEN
    RAISE EXCEPTION 'rate_night change without booking.actor/booking.reason';
  END IF;
  IF TG_OP = 'UPDATE' AND rate_night_json(OLD) = rate_night_json(NEW) THEN
    RETURN NULL;
  END IF;
  INSERT INTO rate_ledger (rate_plan_id, night, actor, reason, before, after)
  VALUES (NEW.rate_plan_id, NEW.night, actor, reason,
          CASE WHEN TG_OP = 'UPDATE' THEN rate_night_json(OLD) END, rate_night_json(NEW));
  RETURN NULL;
END $$;
CREATE TRIGGER rate_night_ledger AFTER INSERT OR UPDATE ON rate_night
  FOR EACH ROW EXECUTE FUNCTION rate_night_ledger();

CREATE FUNCTION rate_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END $$;
CREATE TRIGGER rate_ledger_append_only BEFORE UPDATE OR DELETE ON rate_ledger
  FOR EACH ROW EXECUTE FUNCTION rate_ledger_append_only();
CREATE TRIGGER rate_ledger_no_truncate BEFORE TRUNCATE ON rate_ledger
  FOR EACH STATEMENT EXECUTE FUNCTION rate_ledger_append_only();
-- A night is never removed (that would be an unrecorded change): set its fields instead.
CREATE TRIGGER rate_night_no_delete BEFORE DELETE OR TRUNCATE ON rate_night
  FOR EACH STATEMENT EXECUTE FUNCTION rate_ledger_append_only();

-- A quote reserves nothing and is immutable. No foreign keys: room types and rate plans are never deleted,
-- and at 1,000 quotes/s their KEY SHARE locks on a popular rate plan row would only add contention.
CREATE TABLE quote (
  id             bigserial   PRIMARY KEY,
  customer_id    bigint      NOT NULL,
  -- SHA-256 of (customer, roomTypeId, ratePlanId, checkIn, checkOut, rooms, guests): a hold matches it or not.
  fingerprint    text        NOT NULL,
  room_type_id   bigint      NOT NULL,
  rate_plan_id   bigint      NOT NULL,
  check_in       date        NOT NULL,
  check_out      date        NOT NULL,
  rooms          integer     NOT NULL CHECK (rooms > 0),
  guests         integer     NOT NULL CHECK (guests > 0),
  -- price per room of each night of [check_in, check_out)
  night_prices   bigint[]    NOT NULL CHECK (cardinality(night_prices) = check_out - check_in),
  total_amount   bigint      NOT NULL CHECK (total_amount >= 0),
  deposit_amount bigint      NOT NULL CHECK (deposit_amount >= 0),
  currency       text        NOT NULL,
  valid_until    timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
-- Purge of long-expired quotes; valid_until grows with the id, which BRIN summarises for next to nothing.
CREATE INDEX quote_valid_until_brin ON quote USING brin (valid_until);

-- Down Migration
DROP TABLE quote;
DROP TABLE rate_ledger;
DROP FUNCTION rate_night_json(rate_night);
DROP TABLE rate_night;
DROP FUNCTION rate_night_ledger();
DROP FUNCTION rate_ledger_append_only();
DROP TABLE rate_plan;
ALTER TABLE room_type DROP COLUMN max_guests;
