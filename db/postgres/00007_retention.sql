-- +goose Up
-- The retention sweeper finds ended (or idle active) threads by status and
-- last update, oldest first, a batch at a time.
CREATE INDEX threads_status_updated ON threads (status, updated_at);

-- +goose Down
DROP INDEX threads_status_updated;
