-- +goose Up
-- idPrefix with a short prefix (issue 28): threads_id_prefix_created finds
-- a prefix's matches as one range, but in id order, so a page sorts all of
-- them for its newest 50 — "ab" is 1/256 of the threads, 3,900 at 1 M and
-- 39,000 at 10 M. This index holds each thread under its id's first two
-- characters in list order: a prefix of exactly two characters walks its
-- group newest first and stops after the page (a longer prefix keeps the
-- range: fewer matches to sort than group entries to walk). One entry per
-- thread, written when
-- the thread is created (neither column changes afterwards: a step's update
-- stays heap-only). IF NOT EXISTS: an operator may build it beforehand with
-- CREATE INDEX CONCURRENTLY (docs/operators/storage.md); one such build
-- that failed left an invalid index, which is built again.
-- +goose StatementBegin
DO $$ DECLARE idx regclass; BEGIN
    SELECT i.indexrelid::regclass INTO idx FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'threads'::regclass AND c.relname = 'threads_id_prefix2_created' AND NOT i.indisvalid;
    IF idx IS NOT NULL THEN
        EXECUTE 'DROP INDEX ' || idx::text;
    END IF;
END $$;
-- +goose StatementEnd
CREATE INDEX IF NOT EXISTS threads_id_prefix2_created ON threads ((left(id, 2)), created_at, id);

-- +goose Down
DROP INDEX threads_id_prefix2_created;
