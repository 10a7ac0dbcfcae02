-- Up Migration

-- The outbox pump only relays to Kafka: no event sets off a BullMQ job any more (issue 8 made expiry, refunds and
-- notifications PostgreSQL rows worked by due loops), so the dispatch lane and its mark are gone. Its partial index
-- (001) existed only for its claims; the publish lane keeps outbox_unpublished_idx (id) WHERE published_at IS NULL
-- (011), and outbox_next_id() (011) serves the search feeds, not dispatch.
DROP INDEX outbox_undispatched_idx;
ALTER TABLE outbox DROP COLUMN dispatched_at;

-- Down Migration
-- Rows that exist now were handled in their time (or asked for no job): they come back as dispatched.
ALTER TABLE outbox ADD COLUMN dispatched_at timestamptz;
UPDATE outbox SET dispatched_at = coalesce(published_at, created_at);
CREATE INDEX outbox_undispatched_idx ON outbox (id) WHERE dispatched_at IS NULL;
