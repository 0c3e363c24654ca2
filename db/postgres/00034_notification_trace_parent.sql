-- +goose Up
-- trace_parent is the W3C traceparent of the span that committed the
-- notification (its step's store span; '' when tracing is off or the
-- request was not traced), so a push or a webhook delivery made later, by
-- any replica, joins the step's trace. Additive: a binary that does not
-- know the column keeps writing and reading notifications.
ALTER TABLE thread_notifications ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE thread_notifications DROP COLUMN trace_parent;
