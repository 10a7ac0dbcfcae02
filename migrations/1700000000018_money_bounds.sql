-- Up Migration
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

-- Down Migration
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
