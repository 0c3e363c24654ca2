-- +goose Up
-- contractStats flat in data size (issue 28). Until now it read the roll-up
-- of ended threads (00041) plus every active thread raw: 424 ms at 1 M
-- threads with 50,000 of them active. Now every change of a thread's
-- (contract, version, status, health) is recorded by triggers on threads —
-- whichever release writes it — as insert-only ±1 rows in
-- contract_stats_delta (no key: concurrent writers of one contract never
-- wait on a shared counter row), which the engine's roll-up job folds into
-- contract_stats_total (threadquery.foldContractStats) every minute, in one
-- statement (the rows it deletes are the rows it adds). contractStats reads
-- contract_stats_total plus the unfolded deltas in one statement: rows
-- bounded by contracts × versions × statuses × health, plus the changes of
-- the last minute, exact at every moment.
CREATE TABLE contract_stats_total (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    status           TEXT NOT NULL,
    health           TEXT NOT NULL,
    threads          BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (contract_name, contract_version, status, health)
);
CREATE TABLE contract_stats_delta (
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    status           TEXT NOT NULL,
    health           TEXT NOT NULL,
    n                INTEGER NOT NULL
);
-- The one table without a primary key (an insert-only log read whole; a key
-- would add an index entry per change): its deletes carry the whole row, for
-- an installation that replicates the database logically.
ALTER TABLE contract_stats_delta REPLICA IDENTITY FULL;
-- A started thread adds one, a change of its key moves it (the WHEN clause
-- is evaluated without calling the function: the updates of every step,
-- which change none of the four columns, cost nothing more).
-- +goose StatementBegin
CREATE FUNCTION contract_stats_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF OLD.contract_name IS NOT NULL THEN
            INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
            VALUES (OLD.contract_name, COALESCE(OLD.contract_version, 0), OLD.status, OLD.health, -1);
        END IF;
    END IF;
    IF NEW.contract_name IS NOT NULL THEN
        INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
        VALUES (NEW.contract_name, COALESCE(NEW.contract_version, 0), NEW.status, NEW.health, 1);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER contract_stats_insert AFTER INSERT ON threads
    FOR EACH ROW WHEN (NEW.contract_name IS NOT NULL) EXECUTE FUNCTION contract_stats_row();
CREATE TRIGGER contract_stats_update AFTER UPDATE OF contract_name, contract_version, status, health ON threads
    FOR EACH ROW WHEN (OLD.contract_name IS DISTINCT FROM NEW.contract_name OR OLD.contract_version IS DISTINCT FROM NEW.contract_version
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.health IS DISTINCT FROM NEW.health)
    EXECUTE FUNCTION contract_stats_row();
-- A delete (retention, erasure, by hand) subtracts its threads, one row per
-- key and statement (a retention batch of 100 threads: a few rows).
-- +goose StatementBegin
CREATE FUNCTION contract_stats_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contract_stats_delta (contract_name, contract_version, status, health, n)
    SELECT contract_name, COALESCE(contract_version, 0), status, health, -COUNT(*) FROM contract_stats_gone
    WHERE contract_name IS NOT NULL GROUP BY contract_name, COALESCE(contract_version, 0), status, health;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER contract_stats_delete AFTER DELETE ON threads
    REFERENCING OLD TABLE AS contract_stats_gone FOR EACH STATEMENT EXECUTE FUNCTION contract_stats_deleted();
-- TRUNCATE is refused (00094's threads_no_truncate); should that ever be
-- lifted, an emptied threads leaves no counts behind.
-- +goose StatementBegin
CREATE FUNCTION contract_stats_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM contract_stats_delta;
    DELETE FROM contract_stats_total;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER contract_stats_truncate AFTER TRUNCATE ON threads
    FOR EACH STATEMENT EXECUTE FUNCTION contract_stats_truncated();
-- The threads there are now, counted after the triggers exist: CREATE
-- TRIGGER locks threads against writes until this migration commits, so no
-- write falls between the count and the triggers (one scan of threads, once).
INSERT INTO contract_stats_total (contract_name, contract_version, status, health, threads)
SELECT contract_name, COALESCE(contract_version, 0), status, health, COUNT(*) FROM threads
WHERE contract_name IS NOT NULL GROUP BY contract_name, COALESCE(contract_version, 0), status, health;

-- +goose Down
DROP TRIGGER contract_stats_truncate ON threads;
DROP TRIGGER contract_stats_delete ON threads;
DROP TRIGGER contract_stats_update ON threads;
DROP TRIGGER contract_stats_insert ON threads;
DROP FUNCTION contract_stats_truncated();
DROP FUNCTION contract_stats_deleted();
DROP FUNCTION contract_stats_row();
DROP TABLE contract_stats_delta;
DROP TABLE contract_stats_total;
