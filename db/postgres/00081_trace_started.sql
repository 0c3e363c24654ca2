-- +goose Up
-- trace_started_at is when an OTLP trace thread's earliest span started
-- (within 24 h before the thread was first seen): the thread's start as the
-- UI and its duration show it. created_at stays the time the engine first
-- saw the thread, so list order, cursors and overdue alerts never move.
-- Additive: an older binary neither reads nor writes it.
ALTER TABLE threads ADD COLUMN trace_started_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE threads DROP COLUMN trace_started_at;
