-- +goose Up
-- A party is (principal, role) on a thread: one API key may act as several
-- roles (checkout and warehouse services sharing a key).
ALTER TABLE thread_access DROP CONSTRAINT thread_access_pkey;
ALTER TABLE thread_access ADD PRIMARY KEY (thread_id, principal_id, role);
-- The reason a caller gave when cancelling; error stays for failures.
ALTER TABLE threads ADD COLUMN end_reason TEXT;
-- Sub-steps come back in the order they were sent.
ALTER TABLE step_substeps ADD COLUMN position INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE step_substeps DROP COLUMN position;
ALTER TABLE threads DROP COLUMN end_reason;
DELETE FROM thread_access a USING thread_access b
 WHERE a.thread_id = b.thread_id AND a.principal_id = b.principal_id AND a.role > b.role;
ALTER TABLE thread_access DROP CONSTRAINT thread_access_pkey;
ALTER TABLE thread_access ADD PRIMARY KEY (thread_id, principal_id);
