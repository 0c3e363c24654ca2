-- +goose Up
-- The same columns and indexes as PostgreSQL's 00106 (see there), so the
-- queries are the same on both stores. SQLite gains nothing from them on
-- write: it has no heap-only updates, and an UPDATE that sets a column
-- rewrites the entries of every index on it or on a column generated from
-- it, as it rewrote the four indexes these replace. VIRTUAL: SQLite cannot
-- add a STORED column to a table, and an index on a virtual column stores
-- its values. Times are text
-- ("2006-01-02 15:04:05.999999 +0000 UTC", always UTC); strftime reads the
-- first 19 characters.
ALTER TABLE threads ADD COLUMN settled_at TIMESTAMP GENERATED ALWAYS AS (CASE WHEN status <> 'active' THEN updated_at END) VIRTUAL;
ALTER TABLE threads ADD COLUMN active_minute INTEGER GENERATED ALWAYS AS (CASE WHEN status = 'active'
    THEN CAST(strftime('%s', SUBSTR(REPLACE(updated_at, 'T', ' '), 1, 19)) AS INTEGER) / 60 END) VIRTUAL;
ALTER TABLE threads ADD COLUMN ended_duration_ms INTEGER GENERATED ALWAYS AS (CASE WHEN status = 'active' THEN 0 ELSE duration_ms END) VIRTUAL;
DROP INDEX IF EXISTS threads_status_updated;
DROP INDEX IF EXISTS threads_ended_updated;
DROP INDEX IF EXISTS threads_trace_quiet;
DROP INDEX IF EXISTS threads_duration_created_id;
CREATE INDEX threads_settled ON threads (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX threads_active_minute ON threads (active_minute) WHERE active_minute IS NOT NULL;
CREATE INDEX threads_trace_quiet_minute ON threads (active_minute) WHERE trace_root_ended_at IS NOT NULL AND active_minute IS NOT NULL;
CREATE INDEX threads_ended_duration_created_id ON threads (ended_duration_ms, created_at, id);

-- +goose Down
DROP INDEX threads_ended_duration_created_id;
DROP INDEX threads_trace_quiet_minute;
DROP INDEX threads_active_minute;
DROP INDEX threads_settled;
ALTER TABLE threads DROP COLUMN ended_duration_ms;
ALTER TABLE threads DROP COLUMN active_minute;
ALTER TABLE threads DROP COLUMN settled_at;
CREATE INDEX threads_status_updated ON threads (status, updated_at);
CREATE INDEX threads_ended_updated ON threads (updated_at) WHERE status <> 'active';
CREATE INDEX threads_trace_quiet ON threads (updated_at) WHERE trace_root_ended_at IS NOT NULL AND status = 'active';
CREATE INDEX threads_duration_created_id ON threads (duration_ms, created_at, id);
