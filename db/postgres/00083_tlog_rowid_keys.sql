-- +goose Up
-- SQLite's 00083 gives the transparency log's leaf and hash tables rowid
-- keys (a BIGINT PRIMARY KEY there is an extra unique index). PostgreSQL
-- has no rowid: its primary key is the one index already, so nothing
-- changes here; the migration exists so both dialects share numbers.
SELECT 1;

-- +goose Down
SELECT 1;
