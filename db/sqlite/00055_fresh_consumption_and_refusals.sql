-- +goose Up
-- fresh_consumed lists (comma-separated step ids) the prerequisite
-- successes ("must succeed before each invocation") an invocation consumed:
-- kept whatever becomes of the grant, so one approval allows one
-- invocation. An unguarded report that consumes writes a grant row of its
-- own (invocation_id 'report:<step id>'). Additive: an older binary writes
-- '' and never reads it.
ALTER TABLE step_grants ADD COLUMN fresh_consumed TEXT NOT NULL DEFAULT '';

-- step_refusals is the operators' log of refused step submissions (a
-- content rule broken): nothing of such a step is recorded on its thread,
-- so this is where "who tried what, when" stays, for a bounded time
-- (contracts.refusal_retention). No foreign key: a refusal outlives
-- neither its retention nor its thread's deletion (both delete it).
CREATE TABLE step_refusals (
    id               TEXT PRIMARY KEY,
    thread_id        TEXT NOT NULL,
    contract_name    TEXT NOT NULL DEFAULT '',
    contract_version INTEGER NOT NULL DEFAULT 0,
    step_name        TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL DEFAULT '',
    principal_id     TEXT NOT NULL,
    role             TEXT NOT NULL DEFAULT '',
    code             TEXT NOT NULL,
    field            TEXT NOT NULL DEFAULT '',
    rule             TEXT NOT NULL DEFAULT '',
    message          TEXT NOT NULL,
    context          TEXT NOT NULL DEFAULT '{}',
    created_at       TIMESTAMP NOT NULL
);
CREATE INDEX step_refusals_created ON step_refusals (created_at);
CREATE INDEX step_refusals_thread ON step_refusals (thread_id, created_at);

-- +goose Down
DROP TABLE step_refusals;
ALTER TABLE step_grants DROP COLUMN fresh_consumed;
