-- +goose Up
-- thread_activities_step (thread_id, step_name, idempotency_key) duplicated
-- what the unique (thread_id, seq) index already serves: every query that
-- filters attempts by step name also names the thread (a step's history,
-- hasStep, the steps' histories of a page), and a thread's attempts are one
-- range of (thread_id, seq), read in seq order as the history wants them.
-- It cost ~65 bytes per attempt (issue 28: 36 MB of 1.4 GB at 100,000
-- threads). Dropping it is an expand step: older binaries' queries are
-- served by the same (thread_id, seq) index.
DROP INDEX IF EXISTS thread_activities_step;

-- +goose Down
CREATE INDEX IF NOT EXISTS thread_activities_step ON thread_activities (thread_id, step_name, idempotency_key);
