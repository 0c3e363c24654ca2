-- +goose Up
-- contractStats flat in data size (issue 28): see the PostgreSQL migration.
-- Every change of a thread's (contract, version, status, health) is
-- recorded by triggers on threads as insert-only ±1 rows in
-- contract_stats_delta, which the roll-up job folds into
-- contract_stats_total; contractStats reads both.
CREATE TABLE contract_stats_total (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    status           TEXT NOT NULL,
    health           TEXT NOT NULL,
    threads          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (contract_name, contract_version, status, health)
);
CREATE TABLE contract_stats_delta (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    status           TEXT NOT NULL,
    health           TEXT NOT NULL,
    n                INTEGER NOT NULL
);
-- +goose StatementBegin
CREATE TRIGGER contract_stats_insert AFTER INSERT ON threads WHEN new.contract_name IS NOT NULL BEGIN
    INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
    VALUES (new.contract_name, COALESCE(new.contract_version, 0), new.status, new.health, 1);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER contract_stats_update AFTER UPDATE OF contract_name, contract_version, status, health ON threads
WHEN old.contract_name IS NOT new.contract_name OR old.contract_version IS NOT new.contract_version
    OR old.status IS NOT new.status OR old.health IS NOT new.health BEGIN
    INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
    SELECT old.contract_name, COALESCE(old.contract_version, 0), old.status, old.health, -1 WHERE old.contract_name IS NOT NULL;
    INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
    SELECT new.contract_name, COALESCE(new.contract_version, 0), new.status, new.health, 1 WHERE new.contract_name IS NOT NULL;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER contract_stats_delete AFTER DELETE ON threads WHEN old.contract_name IS NOT NULL BEGIN
    INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
    VALUES (old.contract_name, COALESCE(old.contract_version, 0), old.status, old.health, -1);
END;
-- +goose StatementEnd
-- The threads there are now (SQLite has one writer: none falls between).
INSERT INTO contract_stats_total (contract_name, contract_version, status, health, threads)
SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
WHERE contract_name IS NOT NULL GROUP BY contract_name, COALESCE(contract_version, 0), status, health;

-- +goose Down
DROP TRIGGER contract_stats_delete;
DROP TRIGGER contract_stats_update;
DROP TRIGGER contract_stats_insert;
DROP TABLE contract_stats_delta;
DROP TABLE contract_stats_total;
