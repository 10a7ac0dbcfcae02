-- Up Migration

-- When a send of this create last left (each /pay of its key and each replay by the booking's intent cancellation
-- writes it before sending). A replay the provider refuses on its only attempt settles the create with nothing only
-- once every earlier send (created_at, sent_at, doubted_at) is older than the provider's lateness window at the
-- attempt's listing of the booking's intents: what any of them made was then listed and cancelled, and none can land
-- later (shared/db/intent-cancellations.ts settleRefusedIntentCreate). A nullable column, no default: catalogue only.
ALTER TABLE intent_create ADD COLUMN sent_at timestamptz;

-- Down Migration
ALTER TABLE intent_create DROP COLUMN sent_at;
