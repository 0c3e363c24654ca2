-- +goose Up
-- The transparency log's catch-up (docs/operators/running.md#upgrades):
-- binaries released before the log (migration 00020, chain version 1) do
-- not queue leaves, so a step one of them writes during a rolling upgrade
-- (or after a rollback) reaches thread_activities without a leaf. Every
-- replica appends such steps periodically; caught_up_to is how far (by
-- recorded_at) that has been done, so each pass reads only newer steps
-- (NULL: never, the first pass reads them all).
-- Expand only: older binaries do not read the column.
ALTER TABLE tlog_state ADD COLUMN caught_up_to TIMESTAMP;

-- +goose Down
ALTER TABLE tlog_state DROP COLUMN caught_up_to;
