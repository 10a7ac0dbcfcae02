-- Up Migration

-- One outbox pump claims both of its lanes (Kafka, BullMQ) in id order, all shards at once: the unpublished
-- partial index is ordered by id, like the undispatched one, so a claim reads the oldest rows and stops at its
-- LIMIT. (The pump VACUUMs the table itself, so neither index keeps the entries of done rows.)
DROP INDEX outbox_unpublished_idx;
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;

-- The search indexes tail the outbox by id (shared/db/feed.ts). Their gap rule needs every row's transaction
-- to own an xid before the row's id is drawn: then an id that is not visible yet belongs to a transaction in
-- progress, which the reader's snapshot lists. (A transaction's first write assigns its xid; an id drawn by a
-- column default comes before that write.)
CREATE FUNCTION outbox_next_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_current_xact_id();
  RETURN nextval('outbox_id_seq');
END $$;
ALTER TABLE outbox ALTER COLUMN id SET DEFAULT outbox_next_id();

-- The pump polls (every 40 ms while there is work, backing off to 200 ms when idle) instead of waking on a
-- NOTIFY per commit: at 600 holds/s the trigger, the notification queue and the listener cost more than the polls.
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();

-- Down Migration
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox', '');
  RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
ALTER TABLE outbox ALTER COLUMN id SET DEFAULT nextval('outbox_id_seq');
DROP FUNCTION outbox_next_id();
DROP INDEX outbox_unpublished_idx;
CREATE INDEX outbox_unpublished_idx ON outbox (shard, id) WHERE published_at IS NULL;
