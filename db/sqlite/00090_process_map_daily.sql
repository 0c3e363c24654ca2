-- +goose Up
-- The process map per UTC day (GraphQL processMap): process_map_hourly
-- summed by day, kept in the same statement as the hourly rows on append
-- (threadstore.processMapParts), so a day's row is always the sum of its
-- hours. A map reads whole days here and the hours at its window's ends
-- from process_map_hourly: a 30-day map reads ~30 rows per (node or edge,
-- bucket) instead of ~720. Filled from the hourly rows written so far (the
-- day in the form the driver writes a UTC time: "2006-01-02 00:00:00 +0000 UTC").
CREATE TABLE process_map_daily (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    kind             TEXT NOT NULL,
    from_step        TEXT NOT NULL,
    to_step          TEXT NOT NULL,
    day              TIMESTAMP NOT NULL,
    bucket           INTEGER NOT NULL,
    n                INTEGER NOT NULL DEFAULT 0,
    example_thread   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (contract_name, contract_version, kind, from_step, to_step, day, bucket)
);
CREATE INDEX process_map_daily_day ON process_map_daily (contract_name, contract_version, day);
INSERT INTO process_map_daily (contract_name, contract_version, kind, from_step, to_step, day, bucket, n, example_thread)
SELECT contract_name, contract_version, kind, from_step, to_step, SUBSTR(REPLACE(hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC', bucket, SUM(n), MAX(example_thread)
FROM process_map_hourly GROUP BY contract_name, contract_version, kind, from_step, to_step, SUBSTR(REPLACE(hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC', bucket;

-- +goose Down
DROP TABLE process_map_daily;
