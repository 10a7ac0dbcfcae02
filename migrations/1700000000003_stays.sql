-- Up Migration
CREATE TABLE hotel (
  id            bigserial   PRIMARY KEY,
  name          text        NOT NULL,
  city          text        NOT NULL,
  timezone      text        NOT NULL,
  check_in_time time        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hotel_city_idx ON hotel (city, id);

CREATE TABLE room_type (
  id             bigserial   PRIMARY KEY,
  hotel_id       bigint      NOT NULL REFERENCES hotel (id),
  name           text        NOT NULL,
  deposit_amount bigint      NOT NULL CHECK (deposit_amount >= 0),
  currency       text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX room_type_hotel_idx ON room_type (hotel_id, id);

ALTER TABLE booking ADD CONSTRAINT booking_room_type_fk FOREIGN KEY (room_type_id) REFERENCES room_type (id);

CREATE TABLE room_night (
  room_type_id bigint  NOT NULL REFERENCES room_type (id),
  night        date    NOT NULL,
  sellable     integer NOT NULL CHECK (sellable >= 0),
  held         integer NOT NULL DEFAULT 0 CHECK (held >= 0),
  confirmed    integer NOT NULL DEFAULT 0 CHECK (confirmed >= 0),
  PRIMARY KEY (room_type_id, night),
  CONSTRAINT room_night_no_oversell CHECK (held + confirmed <= sellable)
);

CREATE TABLE inventory_ledger (
  id               bigserial   PRIMARY KEY,
  room_type_id     bigint      NOT NULL,
  night            date        NOT NULL,
  at               timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor            text        NOT NULL,
  reason           text        NOT NULL,
  booking_id       bigint,
  before_sellable  integer     NOT NULL,
  before_held      integer     NOT NULL,
  before_confirmed integer     NOT NULL,
  after_sellable   integer     NOT NULL,
  after_held       integer     NOT NULL,
  after_confirmed  integer     NOT NULL
);
CREATE INDEX inventory_ledger_night_idx ON inventory_ledger (room_type_id, night, id);

-- Every count change is attributed: the use case sets booking.actor / booking.reason / booking.booking_id
-- for its transaction; a change without them is refused.
CREATE FUNCTION room_night_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  actor  text := nullif(current_setting('booking.actor', true), '');
  reason text := nullif(current_setting('booking.reason', true), '');
  bid    bigint := nullif(current_setting('booking.booking_id', true), '')::bigint;
BEGIN
  IF actor IS NULL OR reason IS NULL THEN
    RAISE EXCEPTION 'room_night change without booking.actor/booking.reason';
  END IF;
  IF TG_OP = 'UPDATE' AND (OLD.sellable, OLD.held, OLD.confirmed) = (NEW.sellable, NEW.held, NEW.confirmed) THEN
    RETURN NULL;
  END IF;
  INSERT INTO inventory_ledger (room_type_id, night, actor, reason, booking_id,
    before_sellable, before_held, before_confirmed, after_sellable, after_held, after_confirmed)
  VALUES (NEW.room_type_id, NEW.night, actor, reason, bid,
    coalesce(OLD.sellable, 0), coalesce(OLD.held, 0), coalesce(OLD.confirmed, 0),
    NEW.sellable, NEW.held, NEW.confirmed);
  RETURN NULL;
END $$;
CREATE TRIGGER room_night_ledger AFTER INSERT OR UPDATE ON room_night
  FOR EACH ROW EXECUTE FUNCTION room_night_ledger();

CREATE FUNCTION inventory_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'inventory_ledger is append-only';
END $$;
CREATE TRIGGER inventory_ledger_append_only BEFORE UPDATE OR DELETE ON inventory_ledger
  FOR EACH ROW EXECUTE FUNCTION inventory_ledger_append_only();
CREATE TRIGGER inventory_ledger_no_truncate BEFORE TRUNCATE ON inventory_ledger
  FOR EACH STATEMENT EXECUTE FUNCTION inventory_ledger_append_only();
CREATE TRIGGER room_night_no_delete BEFORE DELETE OR TRUNCATE ON room_night
  FOR EACH STATEMENT EXECUTE FUNCTION inventory_ledger_append_only();

-- Down Migration
DROP TABLE inventory_ledger;
DROP FUNCTION inventory_ledger_append_only();
DROP TABLE room_night;
DROP FUNCTION room_night_ledger();
ALTER TABLE booking DROP CONSTRAINT booking_room_type_fk;
DROP TABLE room_type;
DROP TABLE hotel;
