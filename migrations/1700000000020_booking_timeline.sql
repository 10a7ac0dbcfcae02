-- Up Migration

-- A booking's story (GET /bookings/{id}/timeline): one row per thing recorded about a booking — each event, each
-- payment received, each refund, each intent cancellation owed, each notification sent or skipped. Rows are written
-- by the triggers below in the transaction of the change they record, whatever code path makes it, and are never
-- updated or deleted: the outbox's retention purge (RETENTION_DAYS) and the notification purge do not shorten a
-- story, which lasts as long as its booking (bookings are never deleted).
--
-- Order and paging: oldest first by (at, kind, id). `at` is clock_timestamp() when the row is written (after the
-- writing transaction has its xid: every trigger below runs after the source row's write), so a row that commits
-- after a page was read either belongs to a transaction in progress at that read (the cursor names it) or has a
-- later `at` (shared/db/timeline.ts). What is stored is what is fixed at `at`; a payment's, a refund's and an intent
-- cancellation's current state (status, attempts, last error) is read from its own row at read time.
-- No foreign key to booking: the outbox trigger runs on the hold's hot path, where its KEY SHARE lock would cost.
CREATE TABLE booking_timeline (
  id         bigserial   PRIMARY KEY,
  booking_id bigint      NOT NULL,
  at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind       text        NOT NULL CHECK (kind IN ('event', 'payment', 'refund', 'intent', 'notification')),
  type       text        NOT NULL,
  -- What the entry is about, in its own table: outbox.event_id, payment.id, refund.id, intent_cancellation.booking_id,
  -- notification (event_id, channel) as 'eventId:channel'.
  source_id  text        NOT NULL,
  detail     jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX booking_timeline_booking_idx ON booking_timeline (booking_id, at, kind, id);

CREATE FUNCTION booking_timeline_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'booking_timeline is append-only';
END $$;
CREATE TRIGGER booking_timeline_append_only BEFORE UPDATE OR DELETE ON booking_timeline
  FOR EACH ROW EXECUTE FUNCTION booking_timeline_append_only();
CREATE TRIGGER booking_timeline_no_truncate BEFORE TRUNCATE ON booking_timeline
  FOR EACH STATEMENT EXECUTE FUNCTION booking_timeline_append_only();

-- Each event about a booking (its payload names a bookingId): the topic, and the payload without what the entry
-- already says. inventory.adjusted and rate.updated carry bookingId null and are no booking's.
CREATE FUNCTION booking_timeline_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO booking_timeline (booking_id, kind, type, source_id, detail)
  VALUES ((NEW.payload->>'bookingId')::bigint, 'event', NEW.topic, NEW.event_id::text, NEW.payload - 'type' - 'bookingId');
  RETURN NULL;
END $$;
CREATE TRIGGER outbox_booking_timeline AFTER INSERT ON outbox FOR EACH ROW
  WHEN (jsonb_typeof(NEW.payload->'bookingId') = 'number') EXECUTE FUNCTION booking_timeline_event();

CREATE FUNCTION booking_timeline_payment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO booking_timeline (booking_id, kind, type, source_id) VALUES (NEW.booking_id, 'payment', 'received', NEW.id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER payment_booking_timeline AFTER INSERT ON payment FOR EACH ROW EXECUTE FUNCTION booking_timeline_payment();

CREATE FUNCTION booking_timeline_refund() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO booking_timeline (booking_id, kind, type, source_id) VALUES (NEW.booking_id, 'refund', 'requested', NEW.id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER refund_booking_timeline AFTER INSERT ON refund FOR EACH ROW EXECUTE FUNCTION booking_timeline_refund();

-- An intent cancellation owed: when first written, and again each time a settled one is re-opened (an intent
-- created after the booking left HOLD, a deposit change).
CREATE FUNCTION booking_timeline_intent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO booking_timeline (booking_id, kind, type, source_id, detail)
  VALUES (NEW.booking_id, 'intent', 'cancellation', NEW.booking_id::text,
          CASE WHEN TG_OP = 'UPDATE' THEN '{"reopened": true}'::jsonb ELSE '{}'::jsonb END);
  RETURN NULL;
END $$;
CREATE TRIGGER intent_cancellation_booking_timeline AFTER INSERT ON intent_cancellation
  FOR EACH ROW EXECUTE FUNCTION booking_timeline_intent();
CREATE TRIGGER intent_cancellation_reopened_booking_timeline AFTER UPDATE ON intent_cancellation
  FOR EACH ROW WHEN (OLD.done_at IS NOT NULL AND NEW.done_at IS NULL) EXECUTE FUNCTION booking_timeline_intent();

-- A notification once settled (sent_at or delivery set: migration 016), with how: 'skipped' when delivery says so,
-- else 'sent' ('webhook', 'log', or null for a row settled by a version that did not record it). Its row is purged
-- after RETENTION_DAYS, so the entry keeps what it says.
CREATE FUNCTION booking_timeline_notification() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO booking_timeline (booking_id, kind, type, source_id, detail)
  VALUES (NEW.booking_id, 'notification', NEW.channel, NEW.event_id::text || ':' || NEW.channel,
          jsonb_build_object('status', CASE WHEN NEW.delivery = 'skipped' THEN 'skipped' ELSE 'sent' END,
                             'delivery', NEW.delivery, 'eventId', NEW.event_id, 'eventType', NEW.event_type, 'attempts', NEW.attempts));
  RETURN NULL;
END $$;
CREATE TRIGGER notification_settled_booking_timeline AFTER INSERT ON notification
  FOR EACH ROW WHEN (NEW.sent_at IS NOT NULL OR NEW.delivery IS NOT NULL) EXECUTE FUNCTION booking_timeline_notification();
CREATE TRIGGER notification_settling_booking_timeline AFTER UPDATE ON notification
  FOR EACH ROW WHEN (OLD.sent_at IS NULL AND OLD.delivery IS NULL AND (NEW.sent_at IS NOT NULL OR NEW.delivery IS NOT NULL))
  EXECUTE FUNCTION booking_timeline_notification();

-- What exists already, at the time its own row says (events purged before now are gone).
INSERT INTO booking_timeline (booking_id, at, kind, type, source_id, detail)
SELECT booking_id, at, kind, type, source_id, detail FROM (
  SELECT (payload->>'bookingId')::bigint AS booking_id, created_at AS at, 'event' AS kind, topic AS type, event_id::text AS source_id,
         payload - 'type' - 'bookingId' AS detail
  FROM outbox WHERE jsonb_typeof(payload->'bookingId') = 'number'
  UNION ALL
  SELECT booking_id, received_at, 'payment', 'received', id::text, '{}'::jsonb FROM payment
  UNION ALL
  SELECT booking_id, created_at, 'refund', 'requested', id::text, '{}'::jsonb FROM refund
  UNION ALL
  SELECT booking_id, created_at, 'intent', 'cancellation', booking_id::text, '{}'::jsonb FROM intent_cancellation
  UNION ALL
  SELECT booking_id, coalesce(sent_at, created_at), 'notification', channel, event_id::text || ':' || channel,
         jsonb_build_object('status', CASE WHEN delivery = 'skipped' THEN 'skipped' ELSE 'sent' END,
                            'delivery', delivery, 'eventId', event_id, 'eventType', event_type, 'attempts', attempts)
  FROM notification WHERE sent_at IS NOT NULL OR delivery IS NOT NULL
) existing
ORDER BY at, kind, source_id;

-- Down Migration
DROP TRIGGER notification_settling_booking_timeline ON notification;
DROP TRIGGER notification_settled_booking_timeline ON notification;
DROP FUNCTION booking_timeline_notification();
DROP TRIGGER intent_cancellation_reopened_booking_timeline ON intent_cancellation;
DROP TRIGGER intent_cancellation_booking_timeline ON intent_cancellation;
DROP FUNCTION booking_timeline_intent();
DROP TRIGGER refund_booking_timeline ON refund;
DROP FUNCTION booking_timeline_refund();
DROP TRIGGER payment_booking_timeline ON payment;
DROP FUNCTION booking_timeline_payment();
DROP TRIGGER outbox_booking_timeline ON outbox;
DROP FUNCTION booking_timeline_event();
DROP TABLE booking_timeline;
DROP FUNCTION booking_timeline_append_only();
