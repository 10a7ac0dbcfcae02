-- Up Migration
-- What a booking was sold at; a later calendar change never rewrites it.
ALTER TABLE booking
  ADD COLUMN guests integer CHECK (guests > 0),
  ADD COLUMN rate_plan_id bigint REFERENCES rate_plan (id),
  -- The quote the hold was made with; a trace only (quotes are purged, the booking keeps its own prices).
  ADD COLUMN quote_id bigint,
  ADD COLUMN total_amount bigint CHECK (total_amount >= 0),
  -- price per room of each night of [check_in, check_out), for stays held on a rate plan
  ADD COLUMN night_prices bigint[];

-- Bookings made before prices existed: stays had one guest by default; a car's total follows its daily price.
UPDATE booking SET guests = 1 WHERE kind = 'stay';
UPDATE booking b SET total_amount = c.daily_price * ceil(extract(epoch FROM upper(b.period) - lower(b.period)) / 86400)::bigint
FROM car c WHERE b.kind = 'car' AND c.id = b.car_id;

ALTER TABLE booking
  ADD CONSTRAINT booking_stay_guests CHECK (kind <> 'stay' OR guests IS NOT NULL),
  ADD CONSTRAINT booking_car_total CHECK (kind <> 'car' OR (total_amount IS NOT NULL AND guests IS NULL AND rate_plan_id IS NULL)),
  ADD CONSTRAINT booking_rate_plan_prices CHECK (
    (rate_plan_id IS NULL) = (night_prices IS NULL)
    AND (rate_plan_id IS NULL OR (total_amount IS NOT NULL AND cardinality(night_prices) = check_out - check_in)));

-- Down Migration
ALTER TABLE booking
  DROP CONSTRAINT booking_rate_plan_prices,
  DROP CONSTRAINT booking_car_total,
  DROP CONSTRAINT booking_stay_guests,
  DROP COLUMN night_prices,
  DROP COLUMN total_amount,
  DROP COLUMN quote_id,
  DROP COLUMN rate_plan_id,
  DROP COLUMN guests;
