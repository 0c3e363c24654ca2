-- +goose Up
-- Repairs for rolling upgrades and manual deletes (issues 28, 30).
--
-- 1. A thread's tag rows (thread_tags, migration 00087) go with the thread
-- however it is deleted: replicas of a release before 00087 running
-- retention or erasure during a rolling upgrade, or a DELETE by hand, left
-- them behind, and threads(tag:) counts thread_tags alone. The rows already
-- orphaned are removed.
-- +goose StatementBegin
CREATE TRIGGER thread_tags_delete AFTER DELETE ON threads BEGIN
    DELETE FROM thread_tags WHERE thread_id = old.id;
END;
-- +goose StatementEnd
DELETE FROM thread_tags WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = thread_tags.thread_id);
-- 2. The contract roll-up (migration 00041) is keyed on updated_at, no
-- longer completed_at: a thread rolled up under the old key whose
-- completed_at was before the watermark and updated_at at or after it would
-- be counted again. The roll-up is emptied and refills from the oldest
-- ended thread, a day of history per roll-up call (threadquery
-- rollUpContractStats); contractStats reads the threads not rolled up yet
-- raw meanwhile, so it stays exact.
DELETE FROM contract_stats_rollup;
DELETE FROM stats_rollup WHERE name = 'threads';

-- +goose Down
DROP TRIGGER thread_tags_delete;
