-- +goose Up
-- Thread health, folded forward with every step attempt in the attempt's
-- transaction (domain.ThreadHealth), so the thread list filters and sorts by
-- it without reading steps. Rows written before this migration have
-- health_version 0 and are recomputed once at start-up from their attempts.
ALTER TABLE threads ADD COLUMN health TEXT NOT NULL DEFAULT 'OK';
ALTER TABLE threads ADD COLUMN failed_steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN critical_issues INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN major_issues INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN warning_issues INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN first_issue_step TEXT;
ALTER TABLE threads ADD COLUMN first_issue_type TEXT;
ALTER TABLE threads ADD COLUMN first_issue_message TEXT;
ALTER TABLE threads ADD COLUMN first_issue_severity TEXT;
ALTER TABLE threads ADD COLUMN last_activity_at TIMESTAMP;
ALTER TABLE threads ADD COLUMN duration_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN health_version INTEGER NOT NULL DEFAULT 0;
CREATE INDEX threads_health_created ON threads (health, created_at DESC);
CREATE INDEX threads_duration ON threads (duration_ms DESC, id);
CREATE INDEX threads_unhealthy ON threads (id) WHERE health_version = 0;
-- Overview aggregates: threads ended per hour, attempts and validation
-- outcomes per step over a time window (covering, so the scans read the index).
CREATE INDEX threads_completed ON threads (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX thread_activities_recorded ON thread_activities (recorded_at, step_name, status);
CREATE INDEX thread_validations_created ON thread_validations (created_at, step_name, overall_status);

-- +goose Down
DROP INDEX thread_validations_created;
DROP INDEX thread_activities_recorded;
DROP INDEX threads_completed;
DROP INDEX threads_unhealthy;
DROP INDEX threads_duration;
DROP INDEX threads_health_created;
ALTER TABLE threads DROP COLUMN health_version;
ALTER TABLE threads DROP COLUMN duration_ms;
ALTER TABLE threads DROP COLUMN last_activity_at;
ALTER TABLE threads DROP COLUMN first_issue_severity;
ALTER TABLE threads DROP COLUMN first_issue_message;
ALTER TABLE threads DROP COLUMN first_issue_type;
ALTER TABLE threads DROP COLUMN first_issue_step;
ALTER TABLE threads DROP COLUMN warning_issues;
ALTER TABLE threads DROP COLUMN major_issues;
ALTER TABLE threads DROP COLUMN critical_issues;
ALTER TABLE threads DROP COLUMN failed_steps;
ALTER TABLE threads DROP COLUMN health;
