-- +goose Up
-- SQLite's transparency log moved to one row per appending transaction
-- (db/sqlite/00099_tlog_batches.sql); PostgreSQL keeps its tables.
SELECT 1;

-- +goose Down
SELECT 1;
