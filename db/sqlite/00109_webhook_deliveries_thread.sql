-- +goose Up
-- Deleting threads (retention, erasure: DeleteThreads) deletes their
-- webhook deliveries by thread_id with every batch; without an index on it
-- that statement read the whole outbox once per batch (the only child
-- table of a thread without one; issue 28). The previous release's
-- statements are unchanged by it.
CREATE INDEX IF NOT EXISTS webhook_deliveries_thread ON webhook_deliveries (thread_id);

-- +goose Down
DROP INDEX webhook_deliveries_thread;
