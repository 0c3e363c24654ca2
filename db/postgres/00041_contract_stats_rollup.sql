-- +goose Up
-- contractStats from a roll-up, flat in data size (issue 28): the threads of
-- each contract version by status and health, for the threads that ended
-- before stats_rollup 'threads'.rolled_until (an ended thread's contract,
-- status and health never change again). Threads still active or ended since
-- are counted from threads itself (threads_status_created_id,
-- threads_completed); retention and erasure subtract the ended threads they
-- delete in their own transaction.
CREATE TABLE contract_stats_rollup (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    status           TEXT NOT NULL,
    health           TEXT NOT NULL,
    threads          BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (contract_name, contract_version, status, health)
);
-- The active threads' half, index only; contractStats no longer scans every
-- thread's (contract, version, status, health).
CREATE INDEX IF NOT EXISTS threads_active_stats ON threads (contract_name, contract_version, health) WHERE status = 'active';
DROP INDEX IF EXISTS threads_contract_stats;

-- +goose Down
CREATE INDEX threads_contract_stats ON threads (contract_name, contract_version, status, health);
DROP INDEX threads_active_stats;
DELETE FROM stats_rollup WHERE name = 'threads';
DROP TABLE contract_stats_rollup;
