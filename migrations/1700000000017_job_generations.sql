-- Up Migration

-- BullMQ jobs drive the work again; PostgreSQL rows stay the obligations (CONTRACT "Jobs"). Each open row has one
-- live job whose id carries the row's generation: {kind}-{key}-g{job_gen}. A new generation is written only when a
-- new job must replace one that Redis lost or that ended (the reconciler's CAS bump, a re-opened obligation), so a
-- re-armed job never meets an id Redis still retains. Catalogue-only changes (constant defaults, nullable columns).
ALTER TABLE booking ADD COLUMN job_gen integer NOT NULL DEFAULT 0;
ALTER TABLE refund ADD COLUMN job_gen integer NOT NULL DEFAULT 0;
ALTER TABLE notification ADD COLUMN job_gen integer NOT NULL DEFAULT 0;
ALTER TABLE intent_cancellation ADD COLUMN job_gen integer NOT NULL DEFAULT 0;

-- One lease design for every job's claim on its row (shared/db/leases.ts): lease_token (who holds it) and
-- lease_until (when a claim whose process died is free again), on the database's clock. Refunds and notifications
-- have them (migration 013); intent cancellations and holds (their payment checks) get them here.
ALTER TABLE intent_cancellation ADD COLUMN lease_until timestamptz, ADD COLUMN lease_token uuid;
ALTER TABLE booking ADD COLUMN lease_until timestamptz, ADD COLUMN lease_token uuid;

-- Down Migration
ALTER TABLE booking DROP COLUMN lease_until, DROP COLUMN lease_token, DROP COLUMN job_gen;
ALTER TABLE intent_cancellation DROP COLUMN lease_until, DROP COLUMN lease_token, DROP COLUMN job_gen;
ALTER TABLE notification DROP COLUMN job_gen;
ALTER TABLE refund DROP COLUMN job_gen;
