-- +goose Up
-- stepStats flat in history (issue 28): the hourly roll-up's rows summed per
-- contract version and step over every hour rolled up (before stats_rollup
-- 'steps'.rolled_until), kept by the roll-up in the transaction that adds
-- each hour. stepStats reads one row per step plus the raw rows since the
-- watermark, however many hours lie behind it.
CREATE TABLE step_stats_total (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    step_name        TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    violated         INTEGER NOT NULL DEFAULT 0,
    warnings         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (contract_name, contract_version, step_name)
);
INSERT INTO step_stats_total (contract_name, contract_version, step_name, attempts, failed, violated, warnings)
SELECT contract_name, contract_version, step_name, SUM(attempts), SUM(failed), SUM(violated), SUM(warnings)
FROM step_stats_hourly GROUP BY contract_name, contract_version, step_name;

-- +goose Down
DROP TABLE step_stats_total;
