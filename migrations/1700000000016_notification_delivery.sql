-- Up Migration

-- How a notification was settled (CONTRACT "Events", NOTIFY_WEBHOOK_URL): 'webhook' (POSTed to
-- NOTIFY_WEBHOOK_URL and accepted), 'log' (development without a URL: written to the log) or 'skipped'
-- (NOTIFY_WEBHOOK_URL=none: sending is off, recorded as skipped, never as sent). NULL while unsettled, and for
-- rows settled before this column existed. sent_at stays the moment it was settled.
ALTER TABLE notification
  ADD COLUMN delivery text CHECK (delivery IN ('webhook', 'log', 'skipped'));

-- Down Migration
ALTER TABLE notification DROP COLUMN delivery;
