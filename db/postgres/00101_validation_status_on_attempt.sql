-- +goose Up
-- Compact validation results, expand step (issue 28). 98 % of the rows of
-- thread_validations say `passed` with no issues (179 MiB of 965 at 100,000
-- seeded threads). Such a result can be stored as validation_status =
-- 'passed' on its attempt instead of a row. This release only reads that
-- form, beside the rows (a validation is the attempt's row when it has one,
-- else its validation_status; no release writes both for one attempt); it
-- still writes every result as a row, which the previous release reads.
-- The next release writes passed results without issues in the compact
-- form only, in a contract migration that raises min_binary_schema to this
-- release's schema (binaries below it read only the rows); a later one may
-- move the old rows over. NULL: no compact result (look for a row).
ALTER TABLE thread_activities ADD COLUMN validation_status TEXT;

-- +goose Down
ALTER TABLE thread_activities DROP COLUMN validation_status;
