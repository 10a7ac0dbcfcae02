-- Up Migration

-- Refunds and notifications are obligations kept in PostgreSQL, not BullMQ jobs (issue 8: nothing that must
-- happen depends on a job only Redis remembers). A due loop in the worker process claims due rows with
-- FOR UPDATE SKIP LOCKED and leases them: lease_until is when a claim (a killed process's too) comes due again,
-- lease_token makes only the claim's owner record its outcome.
ALTER TABLE refund
  ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN lease_until     timestamptz,
  ADD COLUMN lease_token     uuid;
CREATE INDEX refund_due_idx ON refund (next_attempt_at) WHERE status = 'PENDING';

-- (sent_at keeps its DEFAULT now(): a notifications worker of the previous version, still running during a deploy,
-- inserts its row once sent without naming sent_at; the new code always writes sent_at NULL explicitly.)
-- A notification row is written with its event (same transaction), unsent (sent_at NULL), and marked sent
-- once the gateway accepted it (Idempotency-Key {eventId}:{channel}).
ALTER TABLE notification
  ALTER COLUMN sent_at DROP NOT NULL,
  ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN attempts        integer     NOT NULL DEFAULT 0,
  ADD COLUMN last_error      text,
  ADD COLUMN lease_until     timestamptz,
  ADD COLUMN lease_token     uuid,
  ADD COLUMN created_at      timestamptz NOT NULL DEFAULT now();
CREATE INDEX notification_due_idx ON notification (next_attempt_at) WHERE sent_at IS NULL;

-- Notified events of the last day whose BullMQ jobs had not delivered yet become rows (their jobs are no longer
-- worked); the texts are shared/events/notifications.ts's.
INSERT INTO notification (event_id, channel, booking_id, event_type, recipient, body, sent_at)
SELECT o.event_id, c.channel, b.id, o.topic, b.customer_id,
       CASE o.topic
         WHEN 'booking.confirmed' THEN format('Booking %s is confirmed.', b.id)
         WHEN 'booking.expired' THEN format('Your hold %s expired before payment.', b.id)
         WHEN 'booking.cancelled' THEN format('Booking %s was cancelled.', b.id)
         ELSE format('Your refund for booking %s was paid.', b.id)
       END, NULL
FROM outbox o
JOIN booking b ON b.id = (o.payload->>'bookingId')::bigint
CROSS JOIN (VALUES ('sms'), ('push')) AS c (channel)
WHERE o.topic IN ('booking.confirmed', 'booking.expired', 'booking.cancelled', 'refund.succeeded')
  AND o.created_at > now() - interval '1 day'
ON CONFLICT DO NOTHING;

-- Down Migration
DROP INDEX notification_due_idx;
UPDATE notification SET sent_at = coalesce(sent_at, now());
ALTER TABLE notification
  ALTER COLUMN sent_at SET NOT NULL,
  ALTER COLUMN sent_at SET DEFAULT now(),
  DROP COLUMN next_attempt_at, DROP COLUMN attempts, DROP COLUMN last_error, DROP COLUMN lease_until,
  DROP COLUMN lease_token, DROP COLUMN created_at;
DROP INDEX refund_due_idx;
ALTER TABLE refund DROP COLUMN next_attempt_at, DROP COLUMN lease_until, DROP COLUMN lease_token;
