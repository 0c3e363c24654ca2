-- +goose Up
-- The schema compatibility gate (docs/contributors/migrations.md): one row
-- saying which binaries may use this database. A binary's schema is the
-- highest migration it embeds; it serves only while
--   min_binary_schema <= its schema <= the database's schema
-- (the database's schema is the highest version in goose_db_version) and
-- otherwise answers /readyz with 503 and refuses every request and write.
-- Expand migrations leave min_binary_schema alone, so the previous release
-- keeps serving beside this one during a rolling upgrade; a contract
-- migration raises it in its Up (and restores it in its Down) to the schema
-- of the oldest release that no longer needs what it removes.
-- This migration only adds a table: every earlier binary may still use the
-- database, so the floor starts at 1.
CREATE TABLE schema_compat (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    min_binary_schema BIGINT NOT NULL CHECK (min_binary_schema >= 1),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO schema_compat (id, min_binary_schema) VALUES (1, 1);

-- +goose Down
DROP TABLE schema_compat;
