-- Up Migration
-- Two guarantees of issue 16: money within exact integers, and car writers that cannot deadlock (below).
-- Money is at most 10^15 minor units, and so is every total derived from it (CONTRACT.md "Conventions"): every
-- amount stays an exact JavaScript integer (2^53 ≈ 9.007·10^15), so no total is ever rounded on its way out of
-- PostgreSQL. The API refuses more with 400 VALIDATION before writing; these CHECKs hold whoever writes the row (a
-- hold's total is computed in its INSERT, from the car's price: the CHECK is what refuses an oversized one there).
-- NOT VALID then VALIDATE: adding the constraint takes no long lock, and validating scans under a lighter one.
ALTER TABLE car ADD CONSTRAINT car_daily_price_bound CHECK (daily_price <= 1000000000000000) NOT VALID;
ALTER TABLE car ADD CONSTRAINT car_deposit_bound CHECK (deposit_amount <= 1000000000000000) NOT VALID;
ALTER TABLE room_type ADD CONSTRAINT room_type_deposit_bound CHECK (deposit_amount <= 1000000000000000) NOT VALID;
ALTER TABLE rate_night ADD CONSTRAINT rate_night_price_bound CHECK (price <= 1000000000000000) NOT VALID;
ALTER TABLE booking ADD CONSTRAINT booking_deposit_bound CHECK (deposit_amount <= 1000000000000000) NOT VALID;
ALTER TABLE booking ADD CONSTRAINT booking_total_bound CHECK (total_amount <= 1000000000000000) NOT VALID;
ALTER TABLE quote ADD CONSTRAINT quote_total_bound CHECK (total_amount <= 1000000000000000) NOT VALID;
ALTER TABLE quote ADD CONSTRAINT quote_deposit_bound CHECK (deposit_amount <= 1000000000000000) NOT VALID;
ALTER TABLE payment ADD CONSTRAINT payment_amount_bound CHECK (amount <= 1000000000000000) NOT VALID;
ALTER TABLE refund ADD CONSTRAINT refund_amount_bound CHECK (amount <= 1000000000000000) NOT VALID;

ALTER TABLE car VALIDATE CONSTRAINT car_daily_price_bound;
ALTER TABLE car VALIDATE CONSTRAINT car_deposit_bound;
ALTER TABLE room_type VALIDATE CONSTRAINT room_type_deposit_bound;
ALTER TABLE rate_night VALIDATE CONSTRAINT rate_night_price_bound;
ALTER TABLE booking VALIDATE CONSTRAINT booking_deposit_bound;
ALTER TABLE booking VALIDATE CONSTRAINT booking_total_bound;
ALTER TABLE quote VALIDATE CONSTRAINT quote_total_bound;
ALTER TABLE quote VALIDATE CONSTRAINT quote_deposit_bound;
ALTER TABLE payment VALIDATE CONSTRAINT payment_amount_bound;
ALTER TABLE refund VALIDATE CONSTRAINT refund_amount_bound;

-- A car's exclusion constraint (booking_car_no_overlap) waits for any uncommitted overlapping row it meets, so two
-- transactions that each put a row into it could wait on each other: two overlapping holds inserted at the same
-- instant, or a hold and a confirmation (or pickup, change, any non-HOT update of a live car booking) of an
-- overlapping one — 40P01, a 500 on the one-statement hold. Every statement that puts a row of car C into the
-- constraint first takes C's transaction advisory lock, here, before the row reaches the index: such writers of one
-- car queue, the later one then meets a committed row (409 CAR_UNAVAILABLE), and none waits on another inside the
-- constraint. An UPDATE has its row lock before this trigger runs, a hold has no row lock: no lock is ever taken
-- in the other order. Moving a booking to car C takes C's lock only (its new row is judged against C's rows alone).
-- Only statements that write the constraint's own columns (insert, status, period, car, kind) take it: a lease or
-- schedule update held open across a provider call by a process that then dies would otherwise stall every writer
-- of the car (jobs-kill's killed payment check did); such an update enters the constraint only when not HOT.
-- The namespace 7240018 is this lock's (the pump's is 7240002); car ids wrap into int4 (a shared lock is only slower).
CREATE FUNCTION booking_lock_car() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(7240018, (NEW.car_id % 2147483647)::int);
  RETURN NEW;
END $$;
CREATE TRIGGER booking_lock_car BEFORE INSERT OR UPDATE OF status, period, car_id, kind ON booking
  FOR EACH ROW WHEN (NEW.kind = 'car' AND NEW.status IN ('HOLD', 'CONFIRMED', 'ON_TRIP'))
  EXECUTE FUNCTION booking_lock_car();

-- Down Migration
DROP TRIGGER booking_lock_car ON booking;
DROP FUNCTION booking_lock_car();
ALTER TABLE refund DROP CONSTRAINT refund_amount_bound;
ALTER TABLE payment DROP CONSTRAINT payment_amount_bound;
ALTER TABLE quote DROP CONSTRAINT quote_deposit_bound;
ALTER TABLE quote DROP CONSTRAINT quote_total_bound;
ALTER TABLE booking DROP CONSTRAINT booking_total_bound;
ALTER TABLE booking DROP CONSTRAINT booking_deposit_bound;
ALTER TABLE rate_night DROP CONSTRAINT rate_night_price_bound;
ALTER TABLE room_type DROP CONSTRAINT room_type_deposit_bound;
ALTER TABLE car DROP CONSTRAINT car_deposit_bound;
ALTER TABLE car DROP CONSTRAINT car_daily_price_bound;
