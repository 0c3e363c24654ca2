-- +goose Up
-- The list's refKey filter ignores case (LOWER(ref_key) = lower(term),
-- issue 30): this index serves it, and refKey with an exact refValue, the
-- way thread_refs_value (ref_key, ref_value) serves exact SDK lookups.
-- Expand only: older binaries keep using thread_refs_value.
CREATE INDEX IF NOT EXISTS thread_refs_key_lower ON thread_refs (LOWER(ref_key), ref_value);

-- +goose Down
DROP INDEX IF EXISTS thread_refs_key_lower;
