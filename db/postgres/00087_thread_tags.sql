-- +goose Up
-- threads(tag:) as an index range scan (issue 28): one row per thread and
-- tag, ordered like the list ((created_at, thread_id) within a tag), so a
-- page walks one tag in time order and the bounded totalCount reads at most
-- 10,001 index entries (index-only) instead of 10,001 heap rows found
-- through the GIN index. Kept by the triggers below from threads.tags and
-- threads.created_at (which an OTLP trace can move back); the thread's
-- deletion removes its rows (threadstore's DeleteThreads lists the table).
CREATE TABLE thread_tags (
    thread_id  TEXT NOT NULL,
    tag        TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (thread_id, tag)
);
INSERT INTO thread_tags (thread_id, tag, created_at)
SELECT DISTINCT t.id, j.tag, t.created_at FROM threads t, jsonb_array_elements_text(t.tags) AS j(tag);
CREATE INDEX thread_tags_tag_created ON thread_tags (tag, created_at, thread_id);
-- The GIN index served only the tag filter.
DROP INDEX IF EXISTS threads_tags;
-- +goose StatementBegin
CREATE FUNCTION thread_tags_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM thread_tags WHERE thread_id = OLD.id;
    END IF;
    INSERT INTO thread_tags (thread_id, tag, created_at)
    SELECT DISTINCT NEW.id, j.tag, NEW.created_at FROM jsonb_array_elements_text(NEW.tags) AS j(tag);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER thread_tags_insert AFTER INSERT ON threads
    FOR EACH ROW WHEN (NEW.tags <> '[]'::jsonb) EXECUTE FUNCTION thread_tags_sync();
CREATE TRIGGER thread_tags_update AFTER UPDATE OF tags, created_at ON threads
    FOR EACH ROW WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION thread_tags_sync();

-- +goose Down
DROP TRIGGER thread_tags_update ON threads;
DROP TRIGGER thread_tags_insert ON threads;
DROP FUNCTION thread_tags_sync();
DROP TABLE thread_tags;
CREATE INDEX IF NOT EXISTS threads_tags ON threads USING GIN (tags jsonb_path_ops);
