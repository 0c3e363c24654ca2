-- +goose Up
-- Contract (issue 28, docs/contributors/migrations.md): thread_step_states.
-- latest_context repeated the latest attempt's context (74.8 MiB of 965 at
-- 100,000 seeded threads). Binaries from c0bb802 on read a step's latest
-- context from its attempt (by latest_step_id); this release stops writing
-- the copy (new rows take the default '{}', an updated row is set to it).
-- The column stays: the previous release still writes it in its upsert, so
-- dropping it now would fail that release's writes during a rolling
-- upgrade. The next release drops it (its contract migration raising the
-- floor to this release's schema).
--
-- What changes meaning is the value: a binary that reads the copy (those
-- before c0bb802, which judged content references from it) would see '{}'
-- for every step this release writes. So the floor rises to 92, the first
-- schema every binary of which reads the attempt's context (binaries of
-- schema 87-90 were built on branches without c0bb802); the previous
-- release's schema is above it, so it keeps serving. Existing rows keep
-- their copy until their step's next attempt (no table-wide rewrite at
-- start-up); see docs/operators/storage.md.
UPDATE schema_compat SET min_binary_schema = 92, updated_at = now() WHERE id = 1;

-- +goose Down
-- The floor before this migration. Steps written since hold '{}' in the
-- copy: a binary below 92 that serves again reads their latest context as
-- empty (roll back to a release of schema 92 or above).
UPDATE schema_compat SET min_binary_schema = 1, updated_at = now() WHERE id = 1;
