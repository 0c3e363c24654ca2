-- +goose Up
-- The process map of a contract version (GraphQL processMap): how threads
-- really ran, per UTC hour. Maintained on append, in the step's own
-- transaction, for the first attempt of each step identity of a contract
-- thread: kind 'N' rows count steps reached (to_step; from_step ''), kind
-- 'E' rows count step orders taken (from_step → to_step, from_step '' for a
-- thread's first step). bucket is the duration's log2 bucket in
-- milliseconds (-1: unknown): node rows the attempt's own duration, edge
-- rows the time since the thread's previous activity. A map over any window
-- reads at most hours × edges × buckets rows, whatever the number of threads.
-- example_thread is one thread (the latest written) of the row. Rows of an
-- older binary's appends during a rolling upgrade are not counted.
CREATE TABLE process_map_hourly (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    kind             TEXT NOT NULL,
    from_step        TEXT NOT NULL,
    to_step          TEXT NOT NULL,
    hour             TIMESTAMP NOT NULL,
    bucket           INTEGER NOT NULL,
    n                INTEGER NOT NULL DEFAULT 0,
    example_thread   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (contract_name, contract_version, kind, from_step, to_step, hour, bucket)
);
CREATE INDEX process_map_hourly_hour ON process_map_hourly (contract_name, contract_version, hour);

-- +goose Down
DROP TABLE process_map_hourly;
