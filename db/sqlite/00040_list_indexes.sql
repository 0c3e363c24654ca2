-- +goose Up
-- Every thread list is an index range scan in the list's own order
-- (issue 28; docs/operators/storage.md names the query each index serves).
-- threads_created (created_at, id) already serves the unfiltered list.
CREATE INDEX IF NOT EXISTS threads_status_created_id ON threads (status, created_at, id);
DROP INDEX IF EXISTS threads_status_created;
CREATE INDEX IF NOT EXISTS threads_health_created_id ON threads (health, created_at, id);
DROP INDEX IF EXISTS threads_health_created;
-- contract_version, status and health trail the key (the order is the
-- same: id is unique) so their filters and counts read the index alone.
CREATE INDEX IF NOT EXISTS threads_contract_created_id ON threads (contract_name, created_at, id, contract_version, status, health);
DROP INDEX IF EXISTS threads_contract;
CREATE INDEX IF NOT EXISTS threads_duration_created_id ON threads (duration_ms, created_at, id);
DROP INDEX IF EXISTS threads_duration;
CREATE INDEX IF NOT EXISTS threads_ended_updated ON threads (updated_at) WHERE status <> 'active';
CREATE INDEX IF NOT EXISTS step_substeps_thread ON step_substeps (thread_id);
CREATE INDEX IF NOT EXISTS thread_refs_linked_value ON thread_refs (ref_value) WHERE ref_key LIKE 'linkedThread:%';
DROP INDEX IF EXISTS thread_refs_linked;
-- Ref substring search: SQLite has no trigram btree, so an FTS5 trigram
-- table indexes the ref values (rowid = thread_refs' rowid), kept by the
-- triggers below. Case-insensitive like LOWER(..) LIKE; a term of fewer than
-- three characters cannot use it and scans thread_refs instead.
CREATE VIRTUAL TABLE thread_refs_trgm USING fts5(ref_value, content='thread_refs', content_rowid='rowid', tokenize='trigram case_sensitive 0');
INSERT INTO thread_refs_trgm(rowid, ref_value) SELECT rowid, ref_value FROM thread_refs;
-- +goose StatementBegin
CREATE TRIGGER thread_refs_trgm_insert AFTER INSERT ON thread_refs BEGIN
    INSERT INTO thread_refs_trgm(rowid, ref_value) VALUES (new.rowid, new.ref_value);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER thread_refs_trgm_delete AFTER DELETE ON thread_refs BEGIN
    INSERT INTO thread_refs_trgm(thread_refs_trgm, rowid, ref_value) VALUES ('delete', old.rowid, old.ref_value);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER thread_refs_trgm_update AFTER UPDATE OF ref_value ON thread_refs BEGIN
    INSERT INTO thread_refs_trgm(thread_refs_trgm, rowid, ref_value) VALUES ('delete', old.rowid, old.ref_value);
    INSERT INTO thread_refs_trgm(rowid, ref_value) VALUES (new.rowid, new.ref_value);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER thread_refs_trgm_update;
DROP TRIGGER thread_refs_trgm_delete;
DROP TRIGGER thread_refs_trgm_insert;
DROP TABLE thread_refs_trgm;
CREATE INDEX thread_refs_linked ON thread_refs (thread_id) WHERE ref_key LIKE 'linkedThread:%';
DROP INDEX thread_refs_linked_value;
DROP INDEX step_substeps_thread;
DROP INDEX threads_ended_updated;
CREATE INDEX threads_duration ON threads (duration_ms DESC, id);
DROP INDEX threads_duration_created_id;
CREATE INDEX threads_contract ON threads (contract_name, contract_version, created_at);
DROP INDEX threads_contract_created_id;
CREATE INDEX threads_health_created ON threads (health, created_at DESC);
DROP INDEX threads_health_created_id;
CREATE INDEX threads_status_created ON threads (status, created_at);
DROP INDEX threads_status_created_id;
