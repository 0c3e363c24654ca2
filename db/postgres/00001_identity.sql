-- +goose Up
CREATE TABLE installation (
    id          TEXT PRIMARY KEY,
    singleton   BOOLEAN NOT NULL DEFAULT TRUE UNIQUE CHECK (singleton),
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE CHECK (email = lower(email)),
    full_name      TEXT NOT NULL DEFAULT '',
    role           TEXT NOT NULL CHECK (role IN ('admin','member','viewer')),
    status         TEXT NOT NULL CHECK (status IN ('invited','active','suspended','archived')),
    email_verified BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    activated_at   TIMESTAMPTZ,
    last_login_at  TIMESTAMPTZ
);
CREATE INDEX users_active_admins ON users (id) WHERE role = 'admin' AND status = 'active';

CREATE TABLE service_accounts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('member','viewer')),
    active      BOOLEAN NOT NULL DEFAULT TRUE,
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    key_prefix         TEXT NOT NULL,
    key_hash           TEXT NOT NULL UNIQUE,
    user_id            TEXT REFERENCES users(id),
    service_account_id TEXT REFERENCES service_accounts(id),
    created_by         TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMPTZ NOT NULL,
    last_used_at       TIMESTAMPTZ,
    expires_at         TIMESTAMPTZ,
    revoked_at         TIMESTAMPTZ,
    CHECK ((user_id IS NULL) <> (service_account_id IS NULL))
);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE INDEX api_keys_service_account ON api_keys (service_account_id);

CREATE TABLE sessions (
    id             TEXT PRIMARY KEY,
    token_hash     TEXT NOT NULL UNIQUE,
    principal_kind TEXT NOT NULL CHECK (principal_kind IN ('user','service_account')),
    principal_id   TEXT NOT NULL,
    source         TEXT NOT NULL CHECK (source IN ('api_key','license','oidc')),
    source_key_id  TEXT REFERENCES api_keys(id),
    identity       TEXT NOT NULL DEFAULT '',
    id_token_hint  TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    revoked_at     TIMESTAMPTZ
);
CREATE INDEX sessions_principal ON sessions (principal_id);
CREATE INDEX sessions_source_key ON sessions (source_key_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- A person's identity at the registry (OIDC issuer + subject), bound to one user
-- at their first verified sign-in.
CREATE TABLE identity_bindings (
    issuer      TEXT NOT NULL,
    subject     TEXT NOT NULL,
    user_id     TEXT NOT NULL UNIQUE REFERENCES users(id),
    email       TEXT NOT NULL,
    active      BOOLEAN NOT NULL DEFAULT TRUE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (issuer, subject)
);

CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    at          TIMESTAMPTZ NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    details     JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at);

-- Key/value engine settings changed from the UI (e.g. the engine URL override).
CREATE TABLE settings (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    updated_by  TEXT NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE settings;
DROP TABLE audit_log;
DROP TABLE identity_bindings;
DROP TABLE sessions;
DROP TABLE api_keys;
DROP TABLE service_accounts;
DROP TABLE users;
DROP TABLE installation;
