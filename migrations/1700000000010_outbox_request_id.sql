-- Up Migration
-- The request an event was written for (X-Request-Id) and its W3C trace context: the dispatcher copies them
-- into job data, the relay into Kafka headers, so one id finds a booking's whole story. Null for events
-- written outside a request or job (sweeps, scripts) and for rows written before this migration.
ALTER TABLE outbox ADD COLUMN request_id text, ADD COLUMN traceparent text;

-- Down Migration
ALTER TABLE outbox DROP COLUMN request_id, DROP COLUMN traceparent;
