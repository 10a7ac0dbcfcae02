-- Up Migration

-- The search indexes follow the car catalogue by a version cursor instead of reloading every car every
-- SEARCH_CACHE_TTL_S/2: each insert or update of a car takes the next value of car_catalogue_version_seq, and an
-- API process reads only the cars above the highest version it has settled (shared/search/tail-cursor.ts). The
-- gap rule needs the writing transaction to own an xid before the version is drawn (as outbox_next_id() does):
-- a car with a smaller version that becomes visible later then belongs to a transaction the reading snapshot
-- lists as in progress. Rows from before this migration keep version 0 (a rebuild reads every car anyway).
CREATE SEQUENCE car_catalogue_version_seq;
ALTER TABLE car ADD COLUMN catalogue_version bigint NOT NULL DEFAULT 0;
CREATE INDEX car_catalogue_version_idx ON car (catalogue_version);

CREATE FUNCTION car_catalogue_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_current_xact_id();
  NEW.catalogue_version := nextval('car_catalogue_version_seq');
  RETURN NEW;
END $$;
CREATE TRIGGER car_catalogue_version BEFORE INSERT OR UPDATE ON car FOR EACH ROW EXECUTE FUNCTION car_catalogue_version();

-- Down Migration
DROP TRIGGER car_catalogue_version ON car;
DROP FUNCTION car_catalogue_version();
DROP INDEX car_catalogue_version_idx;
ALTER TABLE car DROP COLUMN catalogue_version;
DROP SEQUENCE car_catalogue_version_seq;
