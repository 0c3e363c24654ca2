-- +goose Up
-- The transparency log's leaf and hash tables keyed by their rowid
-- (docs/contributors/performance.md, "Transparency log"). Migration 00020
-- declared their key BIGINT PRIMARY KEY, which SQLite keeps as a separate
-- unique index beside the rowid: every leaf and every stored hash (about
-- three rows per step, written in the step's transaction) cost two b-tree
-- inserts. INTEGER PRIMARY KEY makes idx the rowid: one. Same columns,
-- values and integer affinity, so every binary reads and writes them as
-- before (older ones included). The tables are copied once; on a large log
-- this migration takes a while (about a second per million rows).
CREATE TABLE tlog_hashes_rowid (
    idx  INTEGER PRIMARY KEY,
    hash BLOB NOT NULL
);
INSERT INTO tlog_hashes_rowid (idx, hash) SELECT idx, hash FROM tlog_hashes;
DROP TABLE tlog_hashes;
ALTER TABLE tlog_hashes_rowid RENAME TO tlog_hashes;

CREATE TABLE tlog_leaves_rowid (
    idx        INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    step_id    TEXT,
    data       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
INSERT INTO tlog_leaves_rowid (idx, kind, thread_id, step_id, data, created_at)
    SELECT idx, kind, thread_id, step_id, data, created_at FROM tlog_leaves;
DROP TABLE tlog_leaves;
ALTER TABLE tlog_leaves_rowid RENAME TO tlog_leaves;
CREATE UNIQUE INDEX tlog_leaves_step ON tlog_leaves (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX tlog_leaves_thread ON tlog_leaves (thread_id, idx);

-- +goose Down
CREATE TABLE tlog_hashes_bigint (
    idx  BIGINT PRIMARY KEY,
    hash BLOB NOT NULL
);
INSERT INTO tlog_hashes_bigint (idx, hash) SELECT idx, hash FROM tlog_hashes;
DROP TABLE tlog_hashes;
ALTER TABLE tlog_hashes_bigint RENAME TO tlog_hashes;

CREATE TABLE tlog_leaves_bigint (
    idx        BIGINT PRIMARY KEY,
    kind       TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    step_id    TEXT,
    data       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
INSERT INTO tlog_leaves_bigint (idx, kind, thread_id, step_id, data, created_at)
    SELECT idx, kind, thread_id, step_id, data, created_at FROM tlog_leaves;
DROP TABLE tlog_leaves;
ALTER TABLE tlog_leaves_bigint RENAME TO tlog_leaves;
CREATE UNIQUE INDEX tlog_leaves_step ON tlog_leaves (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX tlog_leaves_thread ON tlog_leaves (thread_id, idx);
