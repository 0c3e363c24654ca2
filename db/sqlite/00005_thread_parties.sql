-- +goose Up
-- A party is (principal, role) on a thread: one API key may act as several
-- roles (checkout and warehouse services sharing a key). SQLite cannot change
-- a primary key in place, so the table is rebuilt.
CREATE TABLE thread_access_new (
    thread_id      TEXT NOT NULL REFERENCES threads(id),
    principal_kind TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    role           TEXT NOT NULL DEFAULT '',
    access_level   TEXT NOT NULL CHECK (access_level IN ('owner','participant','observer','external')),
    granted_by     TEXT NOT NULL DEFAULT '',
    granted_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP,
    PRIMARY KEY (thread_id, principal_id, role)
);
INSERT INTO thread_access_new SELECT thread_id, principal_kind, principal_id, role, access_level, granted_by,
 granted_at, expires_at FROM thread_access;
DROP TABLE thread_access;
ALTER TABLE thread_access_new RENAME TO thread_access;
CREATE INDEX thread_access_principal ON thread_access (principal_id);
-- The reason a caller gave when cancelling; error stays for failures.
ALTER TABLE threads ADD COLUMN end_reason TEXT;
-- Sub-steps come back in the order they were sent.
ALTER TABLE step_substeps ADD COLUMN position INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE step_substeps DROP COLUMN position;
ALTER TABLE threads DROP COLUMN end_reason;
CREATE TABLE thread_access_old (
    thread_id      TEXT NOT NULL REFERENCES threads(id),
    principal_kind TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    role           TEXT NOT NULL DEFAULT '',
    access_level   TEXT NOT NULL CHECK (access_level IN ('owner','participant','observer','external')),
    granted_by     TEXT NOT NULL DEFAULT '',
    granted_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP,
    PRIMARY KEY (thread_id, principal_id)
);
INSERT OR IGNORE INTO thread_access_old SELECT thread_id, principal_kind, principal_id, role, access_level, granted_by,
 granted_at, expires_at FROM thread_access ORDER BY role;
DROP TABLE thread_access;
ALTER TABLE thread_access_old RENAME TO thread_access;
CREATE INDEX thread_access_principal ON thread_access (principal_id);
