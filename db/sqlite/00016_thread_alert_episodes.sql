-- +goose Up
-- A condition is flagged once per episode, not once per thread: episode is
-- the time the condition is measured from (the thread's start for overdue,
-- its last update for silent), so a thread that wakes up and falls silent
-- again is flagged again. Rows written before this column existed take
-- their own time, which is after the update they measured from.
ALTER TABLE thread_alerts ADD COLUMN episode TIMESTAMP;
UPDATE thread_alerts SET episode = created_at;

-- +goose Down
ALTER TABLE thread_alerts DROP COLUMN episode;
