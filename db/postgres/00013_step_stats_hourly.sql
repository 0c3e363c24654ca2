-- +goose Up
-- Per-step counts per UTC hour and contract version, rolled up in the
-- background from thread_activities and thread_validations once an hour has
-- ended (stats_rollup.rolled_until is the first hour not rolled up yet). The
-- contracts and overview pages read these rows for the hours before
-- rolled_until and the raw rows after it, so an aggregate over 1 M steps reads
-- a few thousand rows. Free-form threads have contract_name '' and version 0.
CREATE TABLE step_stats_hourly (
    hour             TIMESTAMPTZ NOT NULL,
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    step_name        TEXT NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    failed           BIGINT NOT NULL DEFAULT 0,
    violated         BIGINT NOT NULL DEFAULT 0,
    warnings         BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, contract_name, contract_version, step_name)
);
CREATE INDEX step_stats_hourly_contract ON step_stats_hourly (contract_name, contract_version);
CREATE TABLE stats_rollup (
    name          TEXT PRIMARY KEY,
    rolled_until  TIMESTAMPTZ NOT NULL
);
-- ContractStats counts threads per (contract version, status, health) from
-- this index alone.
CREATE INDEX IF NOT EXISTS threads_contract_stats ON threads (contract_name, contract_version, status, health);

-- +goose Down
DROP INDEX threads_contract_stats;
DROP TABLE stats_rollup;
DROP TABLE step_stats_hourly;
