-- +goose Up
-- Every thread list is an index range scan in the list's own order
-- (issue 28; docs/operators/storage.md names the query each index serves).
-- The list orders by (created_at, id) in either direction and pages by a
-- (created_at, id) position, so each filter's index ends in those columns.
CREATE INDEX IF NOT EXISTS threads_created_id ON threads (created_at, id);
DROP INDEX IF EXISTS threads_created;
CREATE INDEX IF NOT EXISTS threads_status_created_id ON threads (status, created_at, id);
DROP INDEX IF EXISTS threads_status_created;
CREATE INDEX IF NOT EXISTS threads_health_created_id ON threads (health, created_at, id);
DROP INDEX IF EXISTS threads_health_created;
-- contractName alone (threadsByContract, the UI's contract filter) walks
-- one name in time order; a version, status or health filter keeps rows of
-- that walk from the index alone (INCLUDE), which also bounds the cost of
-- counting them.
CREATE INDEX IF NOT EXISTS threads_contract_created_id ON threads (contract_name, created_at, id) INCLUDE (contract_version, status, health);
DROP INDEX IF EXISTS threads_contract;
CREATE INDEX IF NOT EXISTS threads_duration_created_id ON threads (duration_ms, created_at, id);
DROP INDEX IF EXISTS threads_duration;
-- Retention picks ended threads oldest first (status <> 'active' cannot
-- range over threads_status_updated).
CREATE INDEX IF NOT EXISTS threads_ended_updated ON threads (updated_at) WHERE status <> 'active';
-- The thread page's sub-steps, and the foreign-key checks of every
-- retention or erasure DELETE of a thread's rows.
CREATE INDEX IF NOT EXISTS step_substeps_thread ON step_substeps (thread_id);
-- linkedFrom: threads whose linkedThread:* ref points at a thread.
CREATE INDEX IF NOT EXISTS thread_refs_linked_value ON thread_refs (ref_value) WHERE ref_key LIKE 'linkedThread:%';
DROP INDEX IF EXISTS thread_refs_linked;
-- Ref substring search (threads/threadsByRef refValue): a trigram index on
-- LOWER(ref_value). pg_trgm ships with PostgreSQL (contrib); where the
-- engine's role may not create it, the search still works, as a scan of
-- thread_refs (docs/operators/storage.md).
-- The extension goes to schema public (shared by every schema of the
-- database; installations running the engine in a schema of their own find
-- it there too); the index names the operator class in whatever schema the
-- extension lives.
-- +goose StatementBegin
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm not available (%): ref substring search scans thread_refs', SQLERRM;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
DECLARE
    ext_schema TEXT;
BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NOT NULL THEN
        EXECUTE format('CREATE INDEX IF NOT EXISTS thread_refs_value_trgm ON thread_refs USING GIN (LOWER(ref_value) %I.gin_trgm_ops)', ext_schema);
    END IF;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX IF EXISTS thread_refs_value_trgm;
CREATE INDEX thread_refs_linked ON thread_refs (thread_id) WHERE ref_key LIKE 'linkedThread:%';
DROP INDEX thread_refs_linked_value;
DROP INDEX step_substeps_thread;
DROP INDEX threads_ended_updated;
CREATE INDEX threads_duration ON threads (duration_ms DESC, id);
DROP INDEX threads_duration_created_id;
CREATE INDEX threads_contract ON threads (contract_name, contract_version, created_at DESC);
DROP INDEX threads_contract_created_id;
CREATE INDEX threads_health_created ON threads (health, created_at DESC);
DROP INDEX threads_health_created_id;
CREATE INDEX threads_status_created ON threads (status, created_at DESC);
DROP INDEX threads_status_created_id;
CREATE INDEX threads_created ON threads (created_at DESC, id);
DROP INDEX threads_created_id;
