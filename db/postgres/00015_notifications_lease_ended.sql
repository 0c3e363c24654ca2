-- +goose Up
-- The hub's cursor moves past the rows it pushed, so a push nobody
-- acknowledged before its lease ended lies behind it; the hub finds those
-- through this index (only leased, unsettled rows) instead of scanning the
-- log from the start.
CREATE INDEX IF NOT EXISTS thread_notifications_lease_ended ON thread_notifications (lease_until) WHERE delivery IS NULL AND lease_until IS NOT NULL;

-- +goose Down
DROP INDEX thread_notifications_lease_ended;
