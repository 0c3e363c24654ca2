-- +goose Up
-- The hub reads pending notifications of the step names its sessions
-- subscribed to (owner_id IN … AND step_name IN … AND seq > cursor): with
-- only (owner_id, seq) the rows of unsubscribed steps, which stay pending
-- until they expire, were filtered one by one (150 ms per poll at 41 000
-- pending rows, most of the delivery latency).
CREATE INDEX IF NOT EXISTS thread_notifications_pending_step ON thread_notifications (owner_id, step_name, seq) WHERE delivery IS NULL;

-- +goose Down
DROP INDEX thread_notifications_pending_step;
