-- +goose Up
-- trace_root_ended_at is when an OTLP trace thread's root span ended: the
-- thread ends (completed or failed, from its spans) once no span has
-- arrived for otlp.trace_quiet_period after it. Additive: an older binary
-- neither reads nor writes it (its trace threads stay active, as before).
ALTER TABLE threads ADD COLUMN trace_root_ended_at TIMESTAMP;
-- The quiet-trace sweep reads only the active traces waiting for their
-- quiet period, oldest update first.
CREATE INDEX threads_trace_quiet ON threads (updated_at) WHERE trace_root_ended_at IS NOT NULL AND status = 'active';

-- +goose Down
DROP INDEX threads_trace_quiet;
ALTER TABLE threads DROP COLUMN trace_root_ended_at;
