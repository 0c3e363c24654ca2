-- +goose Up
-- The size of each attempt's context, written with it (issue 25): a list of
-- attempts cuts contexts over limits.graphql.list_context_bytes, and an
-- export bounds a thread by its stored bytes; both decided by the context's
-- text length, which on PostgreSQL serialized every jsonb context whole
-- (120 MiB for one read of four lists of 60 contexts of 512 KiB) only to
-- drop it. Expand step: NULL on rows the previous release writes, whose
-- size the readers still compute from the context.
ALTER TABLE thread_activities ADD COLUMN context_bytes INTEGER;

-- +goose Down
ALTER TABLE thread_activities DROP COLUMN context_bytes;
