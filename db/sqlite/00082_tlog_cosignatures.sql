-- +goose Up
-- Witness cosignatures of the log's checkpoints (C2SP tlog-witness,
-- docs/integrators/verification.md#witnesses): the signature line(s) a
-- witness returned for the checkpoint of size, appended to the checkpoint's
-- note when it is served. One row per checkpoint and witness (the first
-- stored is kept). Expand only: older binaries do not read the table and
-- serve checkpoints without cosignatures.
CREATE TABLE tlog_cosignatures (
    size       BIGINT NOT NULL,
    witness    TEXT NOT NULL,
    lines      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (size, witness)
);

-- +goose Down
DROP TABLE tlog_cosignatures;
