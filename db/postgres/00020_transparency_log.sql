-- +goose Up
-- The installation's transparency log (docs/integrators/verification.md):
-- one Merkle tree over every accepted step and every thread deletion.
--
-- tlog_state is its one row: size is the number of leaves. Every append to
-- the tree locks it (UPDATE … RETURNING), so across all replicas on one
-- database leaf indexes are assigned one writer at a time. backfilled is 1
-- once the steps recorded before this migration have been appended.
CREATE TABLE tlog_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    size       BIGINT NOT NULL,
    backfilled INTEGER NOT NULL DEFAULT 0
);
INSERT INTO tlog_state (id, size, backfilled) VALUES (1, 0, 0);

-- One row per leaf: its canonical JSON (data) and, for lookups, the thread
-- and step it names. Rows are never updated or deleted; deleting a thread
-- appends a tombstone leaf (kind thread_deleted) and keeps these rows, which
-- hold identifiers and hashes, no step content.
CREATE TABLE tlog_leaves (
    idx        BIGINT PRIMARY KEY,
    kind       TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    step_id    TEXT,
    data       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX tlog_leaves_step ON tlog_leaves (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX tlog_leaves_thread ON tlog_leaves (thread_id, idx);

-- The tree's stored hashes (golang.org/x/mod/sumdb/tlog StoredHashIndex):
-- about two per leaf; every proof and tree hash is computed from them.
CREATE TABLE tlog_hashes (
    idx  BIGINT PRIMARY KEY,
    hash BYTEA NOT NULL
);

-- Signed checkpoints (C2SP signed note of a tlog-checkpoint), one per size
-- signed. Ed25519 signatures are deterministic, so replicas signing the same
-- size write the same note.
CREATE TABLE tlog_checkpoints (
    size       BIGINT PRIMARY KEY,
    root       BYTEA NOT NULL,
    note       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- The outbox: a step's transaction inserts its leaf here (no lock, no
-- extra round trip); the sequencer (one at a time across replicas, under
-- the tlog_state row lock) moves pending leaves into the tree in seq order
-- and deletes them in the same transaction. A committed step's leaf is thus
-- either pending or in the tree, never lost.
CREATE TABLE tlog_pending (
    seq        BIGSERIAL PRIMARY KEY,
    kind       TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    step_id    TEXT,
    data       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX tlog_pending_thread ON tlog_pending (thread_id);

-- +goose Down
DROP TABLE tlog_pending;
DROP TABLE tlog_checkpoints;
DROP TABLE tlog_hashes;
DROP TABLE tlog_leaves;
DROP TABLE tlog_state;
