-- +goose Up
-- answer_id names the waitFor answer that holds an allowed grant: a wait
-- asking again with the same invocation id takes it over, so a grant given
-- back because an earlier answer reached no one (cancelWait, a closed
-- socket) is deleted only while that earlier answer still holds it.
ALTER TABLE step_grants ADD COLUMN answer_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE step_grants DROP COLUMN answer_id;
