-- +goose Up
-- The client's id of a step identity's latest attempt (invocationId): a frame
-- re-sent after a lost reply is recognised as that attempt, not a retry.
ALTER TABLE thread_step_states ADD COLUMN invocation_id TEXT;

-- +goose Down
ALTER TABLE thread_step_states DROP COLUMN invocation_id;
