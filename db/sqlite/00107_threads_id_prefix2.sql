-- +goose Up
-- idPrefix with a short prefix (issue 28): the primary key finds a
-- prefix's matches as one range, but in id order, so a page sorts all of
-- them for its newest 50 — "ab" is 1/256 of the threads. This index holds
-- each thread under its id's first two characters in list order: a prefix
-- of exactly two characters walks its group newest first and stops after
-- the page (a longer one keeps the primary key's range). The query names the same expression
-- (substr(t.id, 1, 2)) so SQLite can use it.
CREATE INDEX threads_id_prefix2_created ON threads (substr(id, 1, 2), created_at, id);

-- +goose Down
DROP INDEX threads_id_prefix2_created;
