-- +goose Up
-- Installation secrets by purpose and version, shared by every replica. A
-- generated key is kept here (secret, hex); a key set in the configuration is
-- recorded by its fingerprint only (secret NULL), so a replica configured
-- with a different key is refused at start. Versions are never replaced: a
-- rotation adds one, and old hash chains stay verifiable.
CREATE TABLE installation_keys (
    purpose     TEXT NOT NULL,
    version     TEXT NOT NULL,
    secret      TEXT,
    fingerprint TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (purpose, version)
);

-- +goose Down
DROP TABLE installation_keys;
