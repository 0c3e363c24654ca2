-- +goose Up
-- Retention at scale (issue 28): deleting a batch of threads cost one
-- foreign-key check per deleted thread and referencing table (ten tables),
-- one per deleted attempt for step_substeps(step_id), and one tag trigger
-- call per thread, each a separate query run by the server (≈ 0.1 ms each):
-- 1,000 threads took 1.5 s in these checks alone, more than all their rows.
--
-- 1. The foreign keys of the tables a thread's steps and updates write are
-- dropped. Every writer of these tables (threadstore, in this release and
-- the previous one) writes them in the transaction that holds the thread's
-- row lock (the step batch's SELECT … FOR UPDATE OF t, lockThread,
-- or the thread's own INSERT), and the only path that deletes threads
-- (threadstore.DeleteThreads: erasure and retention) takes the same locks
-- first and deletes every child table explicitly (no ON DELETE CASCADE is
-- relied on). A writer therefore either commits before the delete, whose
-- later statements see and delete its rows, or finds the thread gone; the
-- foreign key never had a row to refuse. thread_keys keeps its key:
-- BindThreadKey writes it without the thread's lock. Nothing the previous
-- release does depends on these keys (expand-only).
ALTER TABLE thread_refs DROP CONSTRAINT IF EXISTS thread_refs_thread_id_fkey;
ALTER TABLE thread_access DROP CONSTRAINT IF EXISTS thread_access_thread_id_fkey;
ALTER TABLE thread_activities DROP CONSTRAINT IF EXISTS thread_activities_thread_id_fkey;
ALTER TABLE thread_step_states DROP CONSTRAINT IF EXISTS thread_step_states_thread_id_fkey;
ALTER TABLE step_substeps DROP CONSTRAINT IF EXISTS step_substeps_thread_id_fkey;
ALTER TABLE step_substeps DROP CONSTRAINT IF EXISTS step_substeps_step_id_fkey;
ALTER TABLE thread_validations DROP CONSTRAINT IF EXISTS thread_validations_thread_id_fkey;
ALTER TABLE thread_notifications DROP CONSTRAINT IF EXISTS thread_notifications_thread_id_fkey;
ALTER TABLE thread_alerts DROP CONSTRAINT IF EXISTS thread_alerts_thread_id_fkey;
ALTER TABLE step_grants DROP CONSTRAINT IF EXISTS step_grants_thread_id_fkey;
-- 2. What the keys also did for a DELETE from threads by any other path (by
-- hand, a future bulk path): refuse to delete a thread whose rows remain.
-- One check per statement (transition table) instead of per row. A
-- transaction that deleted the rows itself says so with the setting
-- threadengine.children_deleted (DeleteThreads sets it, locally, after
-- taking the locks); the previous release's DeleteThreads does not, and is
-- checked.
-- +goose StatementBegin
CREATE FUNCTION threads_children_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('threadengine.children_deleted', true) IS DISTINCT FROM 'on' AND EXISTS (
        SELECT 1 FROM gone g WHERE
               EXISTS (SELECT 1 FROM thread_activities c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM thread_step_states c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM thread_validations c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM thread_notifications c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM step_substeps c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM thread_refs c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM thread_access c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM step_grants c WHERE c.thread_id = g.id)
            OR EXISTS (SELECT 1 FROM thread_alerts c WHERE c.thread_id = g.id)) THEN
        RAISE EXCEPTION 'a deleted thread still has rows in a table that references it'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER threads_children_guard AFTER DELETE ON threads
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION threads_children_guard();
-- 3. The tag rows of deleted threads (migration 00092) go in one statement
-- per DELETE, not one trigger call per thread.
-- +goose StatementBegin
CREATE FUNCTION thread_tags_delete_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM thread_tags t USING gone g WHERE t.thread_id = g.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER thread_tags_delete ON threads;
CREATE TRIGGER thread_tags_delete AFTER DELETE ON threads
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION thread_tags_delete_gone();
-- 4. TRUNCATE fires no DELETE trigger, and the dropped keys used to refuse
-- it; thread_keys still does, but not TRUNCATE … CASCADE, which would empty
-- threads and thread_keys only. It is refused here instead, so no
-- one empties threads and leaves every child row behind.
-- +goose StatementBegin
CREATE FUNCTION threads_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'threads cannot be truncated: their rows in other tables would remain; delete threads through the engine (erasure, retention)'
        USING ERRCODE = 'foreign_key_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER threads_no_truncate BEFORE TRUNCATE ON threads
    FOR EACH STATEMENT EXECUTE FUNCTION threads_no_truncate();

-- +goose Down
DROP TRIGGER threads_no_truncate ON threads;
DROP FUNCTION threads_no_truncate();
DROP TRIGGER thread_tags_delete ON threads;
DROP FUNCTION thread_tags_delete_gone();
CREATE TRIGGER thread_tags_delete AFTER DELETE ON threads
    FOR EACH ROW EXECUTE FUNCTION thread_tags_delete();
DROP TRIGGER threads_children_guard ON threads;
DROP FUNCTION threads_children_guard();
ALTER TABLE step_grants ADD CONSTRAINT step_grants_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_alerts ADD CONSTRAINT thread_alerts_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_notifications ADD CONSTRAINT thread_notifications_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_validations ADD CONSTRAINT thread_validations_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE step_substeps ADD CONSTRAINT step_substeps_step_id_fkey FOREIGN KEY (step_id) REFERENCES thread_activities(id);
ALTER TABLE step_substeps ADD CONSTRAINT step_substeps_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_step_states ADD CONSTRAINT thread_step_states_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_activities ADD CONSTRAINT thread_activities_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_access ADD CONSTRAINT thread_access_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
ALTER TABLE thread_refs ADD CONSTRAINT thread_refs_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads(id);
