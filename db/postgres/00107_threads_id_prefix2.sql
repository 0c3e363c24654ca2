-- +goose Up
-- idPrefix with a short prefix (issue 28): threads_id_prefix_created finds
-- a prefix's matches as one range, but in id order, so a page sorts all of
-- them for its newest 50 — "ab" is 1/256 of the threads, 3,900 at 1 M and
-- 39,000 at 10 M. This index holds each thread under its id's first two
-- characters in list order: a prefix of two characters or more walks its
-- two-character group newest first and stops after the page (a longer
-- prefix filters the group's entries on the id; the planner takes the
-- range instead when that reads fewer). One entry per thread, written when
-- the thread is created (neither column changes afterwards: a step's update
-- stays heap-only). IF NOT EXISTS: an operator may build it beforehand with
-- CREATE INDEX CONCURRENTLY (docs/operators/storage.md).
CREATE INDEX IF NOT EXISTS threads_id_prefix2_created ON threads ((left(id, 2)), created_at, id);

-- +goose Down
DROP INDEX threads_id_prefix2_created;
