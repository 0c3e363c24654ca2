-- +goose Up
-- erased_at marks a user whose personal data was erased (DELETE
-- /v1/users/:id): the row keeps its id, role and status (archived) for the
-- threads and audit entries that name it, with a placeholder email
-- (erased-<id>@erased.invalid) and no name. Additive: an older binary reads
-- and writes users without it.
ALTER TABLE users ADD COLUMN erased_at TIMESTAMP;

-- +goose Down
ALTER TABLE users DROP COLUMN erased_at;
