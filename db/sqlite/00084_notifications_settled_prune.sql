-- +goose Up
-- Settled notifications (acknowledged, expired, dropped) are deleted
-- notifications.settled_retention after they were settled (the hub's
-- settler, app/delivery/acks.go): they were most of the notification log's
-- disk, two rows per step kept forever (issue 28). The pruner picks its
-- batches, oldest settled first, on this index. Rows already settled when
-- this migration runs are the first batches; nothing is deleted here, so
-- the migration stays short on a large table.
CREATE INDEX IF NOT EXISTS thread_notifications_settled ON thread_notifications (settled_at) WHERE delivery IS NOT NULL;

-- +goose Down
DROP INDEX thread_notifications_settled;
