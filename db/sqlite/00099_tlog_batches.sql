-- +goose Up
-- The transparency log's leaves in one row per appending transaction
-- (docs/contributors/performance.md, "Transparency log", update of
-- 2026-11-27 15:00; docs/operators/storage.md). Until now every step wrote,
-- in its own transaction, a tlog_leaves row with two secondary indexes
-- ((step_id), UUID-keyed, and (thread_id, idx)) and about two tlog_hashes
-- rows: the log cost about +19 % per acknowledged step on SQLite.
--
-- tlog_batches: the leaves one transaction appends, keyed by the index of
-- its first leaf (start), count of them. leaves is a JSON array of the leaves' canonical
-- JSON, each as a string (the exact bytes that are hashed); hashes the
-- stored hashes those leaves complete, 32 bytes each, from stored-hash
-- index hstart (golang.org/x/mod/sumdb/tlog StoredHashIndex(0, start)) to
-- StoredHashIndex(0, start + count) - 1, a contiguous range.
CREATE TABLE tlog_batches (
    start      INTEGER PRIMARY KEY,
    count      INTEGER NOT NULL,
    hstart     INTEGER NOT NULL,
    leaves     TEXT NOT NULL,
    hashes     BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL
);
-- A thread's leaves (steps and tombstones), kept when the thread or a step
-- is deleted: per-thread verification names what is missing from it; the
-- step id also finds a step's leaf (with the step's thread_id). Derived from
-- the batches, not written by the steps' transactions: the engine's
-- sequencer adds the entries of the batches from tlog_state.indexed_to on,
-- many commits' at a time, and moves indexed_to; readers read the batches
-- from indexed_to on as well.
CREATE TABLE tlog_thread_leaves (
    thread_id TEXT NOT NULL,
    idx       INTEGER NOT NULL,
    batch     INTEGER NOT NULL,
    step_id   TEXT,
    PRIMARY KEY (thread_id, idx)
) WITHOUT ROWID;
-- The log's size is now the end of the last batch (start + count), or
-- tlog_state.size when that is more (no batch yet, or only leaves older
-- than this migration): a step's transaction no longer updates tlog_state
-- (one page less per commit). The sequencer brings size up to date when it
-- indexes (above).
ALTER TABLE tlog_state ADD COLUMN indexed_to BIGINT NOT NULL DEFAULT 0;
UPDATE tlog_state SET indexed_to = size;
-- The leaves and stored hashes written before stay where they are
-- (tlog_leaves, renamed tlog_leaves_v1, and tlog_hashes; the engine reads
-- both formats): nothing is copied, a large log migrates in constant time.
ALTER TABLE tlog_leaves RENAME TO tlog_leaves_v1;
-- Every leaf as one row, as tlog_leaves was (for operators and ad-hoc
-- queries; the engine reads the tables).
CREATE VIEW tlog_leaves AS
    SELECT idx, kind, thread_id, step_id, data, created_at FROM tlog_leaves_v1
    UNION ALL
    SELECT b.start + CAST(j.key AS INTEGER) AS idx, json_extract(j.value, '$.type') AS kind,
           json_extract(j.value, '$.thread_id') AS thread_id, json_extract(j.value, '$.step_id') AS step_id,
           j.value AS data, b.created_at AS created_at
    FROM tlog_batches b, json_each(b.leaves) j;
-- A contract step (docs/contributors/migrations.md): a binary before this
-- migration would write leaf rows into the view and fail every step, so it
-- refuses to serve instead; `migrate down` lets it serve again. SQLite
-- serves one engine process: no rolling upgrade runs an older one beside.
UPDATE schema_compat SET min_binary_schema = MAX(min_binary_schema, 99), updated_at = CURRENT_TIMESTAMP WHERE id = 1;
-- Kept there while this migration is applied: a later contract migration
-- that writes a lower floor (00100 writes 92) does not let those binaries
-- back in.
-- +goose StatementBegin
CREATE TRIGGER schema_compat_tlog_batches AFTER UPDATE OF min_binary_schema ON schema_compat
WHEN NEW.min_binary_schema < 99
BEGIN
    UPDATE schema_compat SET min_binary_schema = 99 WHERE id = 1;
END;
-- +goose StatementEnd

-- +goose Down
-- Back to one row per leaf and per stored hash (what a release before this
-- migration reads and writes).
DROP TRIGGER schema_compat_tlog_batches;
UPDATE schema_compat SET min_binary_schema = 1, updated_at = CURRENT_TIMESTAMP WHERE id = 1;   -- the floor before this migration
DROP VIEW tlog_leaves;
ALTER TABLE tlog_leaves_v1 RENAME TO tlog_leaves;
INSERT INTO tlog_leaves (idx, kind, thread_id, step_id, data, created_at)
    SELECT b.start + CAST(j.key AS INTEGER), json_extract(j.value, '$.type'), json_extract(j.value, '$.thread_id'),
           json_extract(j.value, '$.step_id'), j.value, b.created_at
    FROM tlog_batches b, json_each(b.leaves) j;
WITH RECURSIVE h (hidx, k, n, hashes) AS (
    SELECT hstart, 0, length(hashes) / 32, hashes FROM tlog_batches WHERE length(hashes) >= 32
    UNION ALL
    SELECT hidx + 1, k + 1, n, hashes FROM h WHERE k + 1 < n
)
INSERT INTO tlog_hashes (idx, hash) SELECT hidx, substr(hashes, k * 32 + 1, 32) FROM h;
UPDATE tlog_state SET size = MAX(size, COALESCE((SELECT start + count FROM tlog_batches ORDER BY start DESC LIMIT 1), 0));
ALTER TABLE tlog_state DROP COLUMN indexed_to;
DROP TABLE tlog_thread_leaves;
DROP TABLE tlog_batches;
