-- +goose Up
-- Compact validation results, contract step (issue 28; 00101 was the
-- expand step). From this schema on the engine writes a passed result
-- without issues only as its attempt's thread_activities.validation_status
-- = 'passed' (no thread_validations row); every other result stays a row.
-- Binaries of schema 101 read both forms; binaries below it read only the
-- rows and would miss these results (an attempt's validation, the thread's
-- count, waitForValidation), so the floor rises to 101, the previous
-- release's schema (MAX: a floor a lower-numbered migration may have
-- raised further stays).
UPDATE schema_compat SET min_binary_schema = MAX(min_binary_schema, 101), updated_at = CURRENT_TIMESTAMP WHERE id = 1;

-- +goose Down
-- Back to rows for every result, so a binary below 101 reads them: each
-- compact result becomes the row it would have been (the attempt's id as
-- the row's, its recording time as the result's, as schema-101 binaries
-- read it), then the floor before this migration (92; on SQLite 00099's
-- trigger keeps 99).
INSERT INTO thread_validations (id, thread_id, step_id, step_name, idempotency_key, overall_status, issues,
    critical_count, warning_count, minor_count, info_count, created_at)
SELECT a.id, a.thread_id, a.id, a.step_name, a.idempotency_key, a.validation_status, '[]', 0, 0, 0, 0, a.recorded_at
FROM thread_activities a WHERE a.validation_status IS NOT NULL;
UPDATE thread_activities SET validation_status = NULL WHERE validation_status IS NOT NULL;
UPDATE schema_compat SET min_binary_schema = 92, updated_at = CURRENT_TIMESTAMP WHERE id = 1;
