-- +goose Up
-- One thread per application key (namespace 'key': the thread action and
-- OTLP's threadify.thread_key) and per OpenTelemetry trace (namespace
-- 'otel_trace'). The primary key makes find-or-create idempotent across
-- replicas.
CREATE TABLE thread_keys (
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    thread_id   TEXT NOT NULL REFERENCES threads(id),
    PRIMARY KEY (namespace, key)
);
CREATE INDEX thread_keys_thread ON thread_keys (thread_id);

-- Traces already ingested keep resolving to their oldest thread.
INSERT INTO thread_keys (namespace, key, thread_id)
SELECT 'otel_trace', v.ref_value,
       (SELECT r.thread_id FROM thread_refs r JOIN threads t ON t.id = r.thread_id
         WHERE r.ref_key = 'otel_trace_id' AND r.ref_value = v.ref_value ORDER BY t.created_at, t.id LIMIT 1)
FROM (SELECT DISTINCT ref_value FROM thread_refs WHERE ref_key = 'otel_trace_id') v;

-- +goose Down
DROP TABLE thread_keys;
