-- Up Migration
-- A deposit of 0 can never be paid (the provider takes no zero payment), so such a hold could never be
-- confirmed: the API refuses it (400, at least 1) and the database too, for every car and room type written from
-- now on. NOT VALID: rows written before are left as they are (and the table is not scanned under a lock).
ALTER TABLE car ADD CONSTRAINT car_deposit_positive CHECK (deposit_amount > 0) NOT VALID;
ALTER TABLE room_type ADD CONSTRAINT room_type_deposit_positive CHECK (deposit_amount > 0) NOT VALID;

-- Down Migration
ALTER TABLE room_type DROP CONSTRAINT room_type_deposit_positive;
ALTER TABLE car DROP CONSTRAINT car_deposit_positive;
