-- +goose Up
-- The Problems view's roll-up (GraphQL problems, threadquery/problems.go):
-- the unhealthy threads (health FAILED or VIOLATED) that ended, per UTC
-- hour they started (created_at) and first issue. A thread is added once,
-- when the roll-up's watermark (stats_rollup 'problems') passes its
-- updated_at: an ended thread's updated_at is when it was ended (the
-- engine's clock, never a client's or a span's), and nothing changes an
-- ended thread again. The threads still active or ended since the
-- watermark are read from threads (threads_active_unhealthy,
-- threads_ended_updated). Deleting a rolled-up thread (retention, erasure)
-- subtracts it in the delete's transaction and clears it as the row's
-- example. message_class is domain.MessageClass of a free-form thread's
-- first issue ('' for contract threads).
CREATE TABLE problems_hourly (
    hour             TIMESTAMPTZ NOT NULL,
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    rule             TEXT NOT NULL,
    step             TEXT NOT NULL,
    message_class    TEXT NOT NULL,
    n                BIGINT NOT NULL DEFAULT 0,
    example_thread   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (hour, contract_name, contract_version, rule, step, message_class)
);
CREATE INDEX threads_active_unhealthy ON threads (created_at) WHERE status = 'active' AND health IN ('FAILED', 'VIOLATED');

-- +goose Down
DROP INDEX threads_active_unhealthy;
DROP TABLE problems_hourly;
