-- +goose Up
-- PostgreSQL's 00094 drops the foreign keys of a thread's child tables, so
-- retention's batches stop paying one check per deleted thread and table.
-- SQLite keeps them: dropping a key there rebuilds the table, its deletes
-- are batched and bounded by its single writer, not by these checks
-- (docs/contributors/performance.md, the retention sweep). The migration
-- exists so both dialects share numbers.
SELECT 1;

-- +goose Down
SELECT 1;
