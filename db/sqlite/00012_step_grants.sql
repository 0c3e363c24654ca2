-- +goose Up
-- Permissions waitFor gave for one step invocation (Python SDK 0.4.0), read
-- and written under the thread's row lock so replicas agree. consumed_step_id
-- is the predecessor success a grant consumed ('' for none): it enables no
-- other grant, also once the grant is cancelled. A cancelled grant refuses a
-- later report carrying its invocation id.
CREATE TABLE step_grants (
    thread_id        TEXT NOT NULL REFERENCES threads(id),
    invocation_id    TEXT NOT NULL,
    step_name        TEXT NOT NULL,
    principal_id     TEXT NOT NULL,
    status           TEXT NOT NULL,
    consumed_step_id TEXT NOT NULL DEFAULT '',
    granted_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (thread_id, invocation_id)
);

-- +goose Down
DROP TABLE step_grants;
