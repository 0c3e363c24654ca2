-- +goose Up
-- Which threads a service account reads: company (every thread, as before)
-- or party (only threads it started or holds an unexpired grant on).
ALTER TABLE service_accounts ADD COLUMN scope TEXT NOT NULL DEFAULT 'company' CHECK (scope IN ('company','party'));

-- +goose Down
ALTER TABLE service_accounts DROP COLUMN scope;
