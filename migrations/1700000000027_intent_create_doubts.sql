-- Up Migration

-- When a send of this create last went unanswered (a timeout, a reset, a 5xx, or a refusal of a retry whose first
-- attempt had timed out): that send may still be carried out by the provider, later. Such a create is in doubt until
-- the provider answers it with an intent; a refusal of some later send (a 4xx to another /pay, or to the
-- cancellation's replay) says nothing of the one in doubt, so it never marks the create answered with nothing
-- (shared/db/intent-cancellations.ts). A nullable column, no default: catalogue only.
ALTER TABLE intent_create ADD COLUMN doubted_at timestamptz;

-- Down Migration
ALTER TABLE intent_create DROP COLUMN doubted_at;
