-- Up Migration

-- When an attempt last sent (or was about to send) POST /v1/refunds for the refund. It is written, with the claim's
-- lease renewed, in its own statement right before the request leaves, and only while that claim still holds the
-- row (shared/db/refunds.ts fenceRefundPost): an attempt whose lease ran out never POSTs. A refund with posted_at set
-- may have been paid by a POST whose answer never came, so every later attempt first lists the intent's refunds at
-- the provider and adopts the one it finds (shared/usecases/refunds.ts). A nullable column, no default: catalogue only.
ALTER TABLE refund ADD COLUMN posted_at timestamptz;

-- PENDING refunds attempted before this migration may have been POSTed (earlier code kept no record of it).
UPDATE refund SET posted_at = updated_at WHERE status = 'PENDING' AND attempts > 0;

-- Down Migration
ALTER TABLE refund DROP COLUMN posted_at;
