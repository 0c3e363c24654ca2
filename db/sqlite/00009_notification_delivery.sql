-- +goose Up
-- The stored notifications are the delivery log. A row is pending while
-- delivery is NULL; a replica leases it (lease_until) for one push
-- (deliveries counts them) and the subscriber's ack settles it. Rows nobody
-- acknowledges are settled as expired after notifications.retention, or as
-- dropped after notifications.max_deliveries pushes.
ALTER TABLE thread_notifications ADD COLUMN delivery TEXT CHECK (delivery IN ('acked','expired','dropped'));
ALTER TABLE thread_notifications ADD COLUMN deliveries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE thread_notifications ADD COLUMN lease_until TIMESTAMP;
ALTER TABLE thread_notifications ADD COLUMN settled_at TIMESTAMP;
-- What was recorded before this log existed was pushed (or not) by the
-- in-memory hub; it is not replayed.
UPDATE thread_notifications SET delivery = 'acked', settled_at = created_at;
CREATE INDEX thread_notifications_pending ON thread_notifications (owner_id, seq) WHERE delivery IS NULL;
CREATE INDEX thread_notifications_pending_age ON thread_notifications (created_at) WHERE delivery IS NULL;

-- +goose Down
DROP INDEX thread_notifications_pending_age;
DROP INDEX thread_notifications_pending;
ALTER TABLE thread_notifications DROP COLUMN settled_at;
ALTER TABLE thread_notifications DROP COLUMN lease_until;
ALTER TABLE thread_notifications DROP COLUMN deliveries;
ALTER TABLE thread_notifications DROP COLUMN delivery;
