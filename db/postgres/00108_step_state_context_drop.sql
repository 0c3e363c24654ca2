-- +goose Up
-- Contract (issue 28, docs/contributors/migrations.md): storage.
--
-- 1. thread_step_states.latest_context goes. It repeated the latest
-- attempt's context until 00100 (schema 100 stopped writing it); binaries
-- of schema 100 and 101 still set it to '{}' in their step-state upsert,
-- and from schema 102 on no statement names it
-- (TestStepStateKeepsNoContextCopy). The previous release (106) is one of
-- those, so the column may go now, with the floor raised to 102: a binary
-- below it would fail every retry it records. PostgreSQL drops a column
-- without rewriting the table: a row keeps its bytes until it is written
-- again (VACUUM FULL or pg_repack return them at once;
-- docs/operators/storage.md).
ALTER TABLE thread_step_states DROP COLUMN IF EXISTS latest_context;

-- 2. thread_activities_recorded (recorded_at, step_name, status), 212 MiB
-- at 1,000,000 seeded threads, is replaced by a B-tree on recorded_at alone
-- (118 MiB there, 0.09 GiB per million threads less). Its readers — the
-- hourly roll-up (an hour of attempts, joined to their threads), stepStats
-- and the overview's attempts since the roll-up's watermark, the log's
-- catch-up pass — read the window's attempts from the table, a run of
-- pages appended in that order; the wider index let them skip the table
-- only where VACUUM had marked its pages all-visible, which a live
-- server's recent attempts never are. A BRIN index (a few KiB) was tried
-- and not kept: the planner asks a B-tree for the column's real highest
-- value when a bound lies past its statistics — every "since the
-- watermark" read does — and without it expected ~2,000 recent attempts
-- where there were none, and chose a parallel plan (stepStats 0.9 ->
-- 6-8 ms at 1 M seeded threads, 26 ms at 10 M); docs/contributors/
-- performance.md. IF NOT EXISTS: the index may be built beforehand,
-- CONCURRENTLY, with the previous release running; the migration then
-- only drops the wide one. The previous release's statements use
-- whichever exists.
-- A CONCURRENTLY build that failed leaves an invalid index, which IF NOT
-- EXISTS would take for done before the wide one is dropped: build it again.
-- +goose StatementBegin
DO $$ DECLARE idx regclass; BEGIN
    SELECT i.indexrelid::regclass INTO idx FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'thread_activities'::regclass AND c.relname = 'thread_activities_recorded_at' AND NOT i.indisvalid;
    IF idx IS NOT NULL THEN
        EXECUTE 'DROP INDEX ' || idx::text;
    END IF;
END $$;
-- +goose StatementEnd
CREATE INDEX IF NOT EXISTS thread_activities_recorded_at ON thread_activities (recorded_at);
DROP INDEX IF EXISTS thread_activities_recorded;

-- 3. threads_active_stats (00041) served the contractStats of releases before
-- 00097 (their active threads per contract version); since 00097 no
-- statement reads it, the previous release's (106) included, and every
-- thread's start wrote an entry into it.
DROP INDEX IF EXISTS threads_active_stats;

-- MAX: a floor a lower-numbered migration raised further stays.
UPDATE schema_compat SET min_binary_schema = GREATEST(min_binary_schema, 102), updated_at = now() WHERE id = 1;

-- +goose Down
-- The floor before this migration (00102's), the B-tree, and the column
-- with its default: binaries of schema 100 and 101 set it again, and
-- every row reads '{}' (no binary reads the copy since 00100's floor).
UPDATE schema_compat SET min_binary_schema = 101, updated_at = now() WHERE id = 1;
CREATE INDEX IF NOT EXISTS threads_active_stats ON threads (contract_name, contract_version, health) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS thread_activities_recorded ON thread_activities (recorded_at, step_name, status);
DROP INDEX IF EXISTS thread_activities_recorded_at;
ALTER TABLE thread_step_states ADD COLUMN latest_context JSONB NOT NULL DEFAULT '{}';
