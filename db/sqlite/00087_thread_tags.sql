-- +goose Up
-- threads(tag:) as an index range scan (issue 28): one row per thread and
-- tag, ordered like the list ((created_at, thread_id) within a tag), so a
-- page walks one tag in time order and the bounded totalCount reads at most
-- 10,001 index entries instead of evaluating json_each on every thread.
-- Kept by the triggers below from threads.tags and threads.created_at
-- (which an OTLP trace can move back); the thread's deletion removes its
-- rows (threadstore's DeleteThreads lists the table).
CREATE TABLE thread_tags (
    thread_id  TEXT NOT NULL,
    tag        TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (thread_id, tag)
) WITHOUT ROWID;
INSERT OR IGNORE INTO thread_tags (thread_id, tag, created_at)
SELECT t.id, j.value, t.created_at FROM threads t, json_each(t.tags) j WHERE j.type = 'text';
CREATE INDEX thread_tags_tag_created ON thread_tags (tag, created_at, thread_id);
-- +goose StatementBegin
CREATE TRIGGER thread_tags_insert AFTER INSERT ON threads WHEN new.tags <> '[]' BEGIN
    INSERT OR IGNORE INTO thread_tags (thread_id, tag, created_at)
    SELECT new.id, j.value, new.created_at FROM json_each(new.tags) j WHERE j.type = 'text';
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER thread_tags_update AFTER UPDATE OF tags, created_at ON threads
WHEN old.tags IS NOT new.tags OR old.created_at IS NOT new.created_at BEGIN
    DELETE FROM thread_tags WHERE thread_id = old.id;
    INSERT OR IGNORE INTO thread_tags (thread_id, tag, created_at)
    SELECT new.id, j.value, new.created_at FROM json_each(new.tags) j WHERE j.type = 'text';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER thread_tags_update;
DROP TRIGGER thread_tags_insert;
DROP TABLE thread_tags;
