-- +goose Up
-- Every step updates its thread's row (status, chain head, step count,
-- updated_at, duration, health). PostgreSQL can do that as a heap-only
-- (HOT) update — no new entry in any of the row's indexes — only when no
-- indexed column changes. updated_at and duration_ms change with every
-- step and were keys of four indexes, so each step inserted an entry into
-- all fifteen indexes of threads (measured: HOT updates 0.99 of the
-- updates with the engine of 2026-11-23, 0.00 before this migration; the
-- step statement's WAL 4.3 → 3.2 KB a step after it; issue 28).
--
-- The four are replaced by indexes on generated columns that a step of an
-- active thread leaves unchanged:
--   settled_at        updated_at of an ended thread, NULL while active: the
--                     retention sweep, the contract and Problems roll-ups
--                     and the list's change marker read ended threads by it;
--   active_minute     the minute (Unix time / 60) of an active thread's
--                     updated_at, NULL once ended: the silence alerts, idle
--                     retention and the OTLP quiet sweep range over it and
--                     compare updated_at itself on the rows it finds; it
--                     changes at most once a minute per thread;
--   ended_duration_ms duration_ms of an ended thread, 0 while active: the
--                     order of orderBy: DURATION (an active thread's
--                     duration is not known until it ends, as Temporal's
--                     ExecutionDuration; it sorts as 0).
-- Adding stored generated columns rewrites the table and its indexes once
-- under an exclusive lock, about as long as VACUUM FULL threads
-- (docs/operators/storage.md). The previous release's binaries keep
-- working on this schema (they never write these columns); their reads by
-- updated_at and duration_ms lose their indexes until they are replaced.
-- IF NOT EXISTS: an operator may run the ALTER TABLE and the CREATE INDEX
-- statements beforehand, at a quiet time, with the previous release still
-- running (it works on the new columns and keeps its own indexes until this
-- migration drops them); the migration then only drops the old indexes.
ALTER TABLE threads
    ADD COLUMN IF NOT EXISTS settled_at TIMESTAMPTZ GENERATED ALWAYS AS (CASE WHEN status <> 'active' THEN updated_at END) STORED,
    ADD COLUMN IF NOT EXISTS active_minute BIGINT GENERATED ALWAYS AS (CASE WHEN status = 'active'
        THEN CAST(floor(extract(epoch FROM (updated_at AT TIME ZONE 'UTC')) / 60) AS BIGINT) END) STORED,
    ADD COLUMN IF NOT EXISTS ended_duration_ms BIGINT GENERATED ALWAYS AS (CASE WHEN status = 'active' THEN 0 ELSE duration_ms END) STORED;
DROP INDEX IF EXISTS threads_status_updated;
DROP INDEX IF EXISTS threads_ended_updated;
DROP INDEX IF EXISTS threads_trace_quiet;
DROP INDEX IF EXISTS threads_duration_created_id;
CREATE INDEX IF NOT EXISTS threads_settled ON threads (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS threads_active_minute ON threads (active_minute) WHERE active_minute IS NOT NULL;
CREATE INDEX IF NOT EXISTS threads_trace_quiet_minute ON threads (active_minute) WHERE trace_root_ended_at IS NOT NULL AND active_minute IS NOT NULL;
CREATE INDEX IF NOT EXISTS threads_ended_duration_created_id ON threads (ended_duration_ms, created_at, id);

-- +goose Down
DROP INDEX threads_ended_duration_created_id;
DROP INDEX threads_trace_quiet_minute;
DROP INDEX threads_active_minute;
DROP INDEX threads_settled;
ALTER TABLE threads DROP COLUMN ended_duration_ms, DROP COLUMN active_minute, DROP COLUMN settled_at;
CREATE INDEX threads_status_updated ON threads (status, updated_at);
CREATE INDEX threads_ended_updated ON threads (updated_at) WHERE status <> 'active';
CREATE INDEX threads_trace_quiet ON threads (updated_at) WHERE trace_root_ended_at IS NOT NULL AND status = 'active';
CREATE INDEX threads_duration_created_id ON threads (duration_ms, created_at, id);
