-- +goose Up
CREATE TABLE contracts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE contract_versions (
    contract_id TEXT NOT NULL REFERENCES contracts(id),
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version > 0),
    source      TEXT NOT NULL,            -- the YAML as uploaded
    definition  JSONB NOT NULL,           -- the parsed contract
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE threads (
    id               TEXT PRIMARY KEY,
    contract_id      TEXT,
    contract_name    TEXT,
    contract_version INTEGER,
    label            TEXT,
    owner_kind       TEXT NOT NULL,
    owner_id         TEXT NOT NULL,
    service_name     TEXT,
    status           TEXT NOT NULL DEFAULT 'active',
    error            TEXT,
    last_hash        TEXT NOT NULL DEFAULT '',
    step_count       INTEGER NOT NULL DEFAULT 0,
    tags             JSONB NOT NULL DEFAULT '[]',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ
);
CREATE INDEX threads_created ON threads (created_at DESC, id);
CREATE INDEX threads_status_created ON threads (status, created_at DESC);
CREATE INDEX threads_contract ON threads (contract_name, contract_version, created_at DESC);

CREATE TABLE thread_refs (
    thread_id   TEXT NOT NULL REFERENCES threads(id),
    ref_key     TEXT NOT NULL,
    ref_value   TEXT NOT NULL,
    PRIMARY KEY (thread_id, ref_key)
);
CREATE INDEX thread_refs_value ON thread_refs (ref_key, ref_value);
CREATE INDEX thread_refs_linked ON thread_refs (thread_id) WHERE ref_key LIKE 'linkedThread:%';

-- Who may see or write a thread beyond its owner (parties that joined).
CREATE TABLE thread_access (
    thread_id      TEXT NOT NULL REFERENCES threads(id),
    principal_kind TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    role           TEXT NOT NULL DEFAULT '',
    access_level   TEXT NOT NULL CHECK (access_level IN ('owner','participant','observer','external')),
    granted_by     TEXT NOT NULL DEFAULT '',
    granted_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ,
    PRIMARY KEY (thread_id, principal_id)
);
CREATE INDEX thread_access_principal ON thread_access (principal_id);

-- Every recorded step attempt, append-only, linked in a per-thread hash chain.
CREATE TABLE thread_activities (
    id              TEXT PRIMARY KEY,       -- the step id (uuid) returned to the SDK
    thread_id       TEXT NOT NULL REFERENCES threads(id),
    seq             INTEGER NOT NULL,       -- position in the thread's chain, from 1
    activity_type   TEXT NOT NULL DEFAULT 'step_recorded',
    step_name       TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    actor           TEXT NOT NULL DEFAULT '',
    actor_service   TEXT NOT NULL DEFAULT '',
    context         JSONB NOT NULL DEFAULT '{}',
    metadata        JSONB NOT NULL DEFAULT '{}',
    started_at      TIMESTAMPTZ,
    finished_at     TIMESTAMPTZ,
    recorded_at     TIMESTAMPTZ NOT NULL,
    content_hash    TEXT NOT NULL,
    hash            TEXT NOT NULL,
    prev_hash       TEXT NOT NULL DEFAULT '',
    UNIQUE (thread_id, seq)
);
CREATE INDEX thread_activities_step ON thread_activities (thread_id, step_name, idempotency_key);

-- The latest state of each step identity (thread, step name, idempotency key).
CREATE TABLE thread_step_states (
    thread_id        TEXT NOT NULL REFERENCES threads(id),
    step_name        TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL,
    status           TEXT NOT NULL,
    retry_count      INTEGER NOT NULL DEFAULT 0,
    latest_step_id   TEXT NOT NULL,
    previous_step    TEXT,
    actor            TEXT NOT NULL DEFAULT '',
    actor_service    TEXT NOT NULL DEFAULT '',
    latest_context   JSONB NOT NULL DEFAULT '{}',
    first_seen_at    TIMESTAMPTZ NOT NULL,
    last_updated_at  TIMESTAMPTZ NOT NULL,
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ,
    PRIMARY KEY (thread_id, step_name, idempotency_key)
);

CREATE TABLE step_substeps (
    id          TEXT PRIMARY KEY,
    thread_id   TEXT NOT NULL REFERENCES threads(id),
    step_id     TEXT NOT NULL REFERENCES thread_activities(id),
    name        TEXT NOT NULL,
    status      TEXT NOT NULL,
    payload     JSONB NOT NULL DEFAULT '{}',
    recorded_at TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX step_substeps_step ON step_substeps (step_id);

CREATE TABLE thread_validations (
    id                TEXT PRIMARY KEY,
    thread_id         TEXT NOT NULL REFERENCES threads(id),
    step_id           TEXT NOT NULL,
    step_name         TEXT NOT NULL,
    idempotency_key   TEXT NOT NULL,
    overall_status    TEXT NOT NULL,
    issues            JSONB NOT NULL DEFAULT '[]',
    critical_count    INTEGER NOT NULL DEFAULT 0,
    warning_count     INTEGER NOT NULL DEFAULT 0,
    minor_count       INTEGER NOT NULL DEFAULT 0,
    info_count        INTEGER NOT NULL DEFAULT 0,
    created_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX thread_validations_thread ON thread_validations (thread_id, created_at DESC);

CREATE TABLE thread_notifications (
    id                TEXT PRIMARY KEY,
    seq               BIGSERIAL UNIQUE,
    thread_id         TEXT NOT NULL REFERENCES threads(id),
    step_id           TEXT NOT NULL DEFAULT '',
    step_name         TEXT NOT NULL,
    idempotency_key   TEXT NOT NULL DEFAULT '',
    contract_name     TEXT NOT NULL DEFAULT '',
    owner_id          TEXT NOT NULL DEFAULT '',
    source            TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    step_status       TEXT NOT NULL DEFAULT '',
    validation_status TEXT NOT NULL DEFAULT '',
    violation_type    TEXT NOT NULL DEFAULT '',
    severity          TEXT NOT NULL DEFAULT 'info',
    message           TEXT NOT NULL,
    details           JSONB NOT NULL DEFAULT '{}',
    created_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX thread_notifications_thread ON thread_notifications (thread_id, created_at DESC);

-- +goose Down
DROP TABLE thread_notifications;
DROP TABLE thread_validations;
DROP TABLE step_substeps;
DROP TABLE thread_step_states;
DROP TABLE thread_activities;
DROP TABLE thread_access;
DROP TABLE thread_refs;
DROP TABLE threads;
DROP TABLE contract_versions;
DROP TABLE contracts;
