-- +goose Up
-- Contract (issue 28, docs/contributors/migrations.md):
-- thread_step_states.latest_context goes. It repeated the latest attempt's
-- context until 00100 (schema 100 stopped writing it); binaries of schema
-- 100 and 101 still set it to '{}' in their step-state upsert, and from
-- schema 102 on no statement names it (TestStepStateKeepsNoContextCopy).
-- The previous release (106) is one of those, so the column may go now,
-- with the floor raised to 102: a binary below it would fail every retry
-- it records. SQLite rewrites the table's rows without the column, in this
-- migration's transaction (docs/operators/storage.md).
--
-- PostgreSQL's 00108 also replaces thread_activities_recorded (recorded_at,
-- step_name, status) with a B-tree on recorded_at alone; SQLite keeps the
-- wider one (the roll-up's hour and the overview's attempts since the
-- watermark read it, index-only there).
ALTER TABLE thread_step_states DROP COLUMN latest_context;

-- threads_active_stats (00041) served the contractStats of releases before
-- 00097 (their active threads per contract version); since 00097 no
-- statement reads it, the previous release's (106) included, and every
-- thread's start wrote an entry into it.
DROP INDEX IF EXISTS threads_active_stats;

-- MAX: a floor a lower-numbered migration raised further stays.
UPDATE schema_compat SET min_binary_schema = MAX(min_binary_schema, 102), updated_at = CURRENT_TIMESTAMP WHERE id = 1;

-- +goose Down
-- The floor before this migration (00102's; 00099's trigger keeps 99 or
-- above) and the column with its default: binaries of schema 100 and 101
-- set it again, and every row reads '{}' (no binary reads the copy since
-- 00100's floor).
UPDATE schema_compat SET min_binary_schema = 101, updated_at = CURRENT_TIMESTAMP WHERE id = 1;
CREATE INDEX IF NOT EXISTS threads_active_stats ON threads (contract_name, contract_version, health) WHERE status = 'active';
ALTER TABLE thread_step_states ADD COLUMN latest_context TEXT NOT NULL DEFAULT '{}';
