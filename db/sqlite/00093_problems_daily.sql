-- +goose Up
-- The Problems view's roll-up per UTC day (GraphQL problems,
-- threadquery/problems.go): problems_hourly (migration 00089) summed by the
-- day of its hour. A 30-day report reads whole days here and only the
-- hours of the days a trend bucket's edge cuts from problems_hourly.
-- Kept by triggers on problems_hourly in the hourly row's own statement,
-- so a day's row is the sum of its hours whichever release writes them
-- (the roll-up's inserts, the deletes' subtractions, a rebuild), also
-- during a rolling upgrade from a release that knows only the hourly
-- table. n moves by the hourly row's change; example_thread is the
-- greatest of its hours' (a read takes the greatest of its rows'), looked
-- up again among the day's hours when the greatest is cleared. day is
-- written as the driver writes a UTC time (as process_map_daily's).
-- Filled from the hourly rows written so far. The day row is created with
-- WHERE NOT EXISTS, not INSERT OR IGNORE: an upsert's DO UPDATE (the
-- roll-up's) makes a trigger's OR IGNORE abort on the conflict.
CREATE TABLE problems_daily (
    day              TIMESTAMP NOT NULL,
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    rule             TEXT NOT NULL,
    step             TEXT NOT NULL,
    message_class    TEXT NOT NULL,
    n                INTEGER NOT NULL DEFAULT 0,
    example_thread   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (day, contract_name, contract_version, rule, step, message_class)
) WITHOUT ROWID;
INSERT INTO problems_daily (day, contract_name, contract_version, rule, step, message_class, n, example_thread)
SELECT SUBSTR(REPLACE(hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC', contract_name, contract_version, rule, step, message_class,
    SUM(n), MAX(example_thread)
FROM problems_hourly
GROUP BY SUBSTR(REPLACE(hour, 'T', ' '), 1, 10), contract_name, contract_version, rule, step, message_class;
-- +goose StatementBegin
CREATE TRIGGER problems_daily_insert AFTER INSERT ON problems_hourly BEGIN
    INSERT INTO problems_daily (day, contract_name, contract_version, rule, step, message_class)
    SELECT SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC', NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class
    WHERE NOT EXISTS (SELECT 1 FROM problems_daily WHERE day = SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = NEW.contract_name
        AND contract_version = NEW.contract_version AND rule = NEW.rule AND step = NEW.step AND message_class = NEW.message_class);
    UPDATE problems_daily SET n = n + NEW.n,
        example_thread = CASE WHEN NEW.example_thread > example_thread THEN NEW.example_thread ELSE example_thread END
    WHERE day = SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = NEW.contract_name AND contract_version = NEW.contract_version
        AND rule = NEW.rule AND step = NEW.step AND message_class = NEW.message_class;
END;
-- +goose StatementEnd
-- An update of n or the example (the roll-up's upsert, the deletes'
-- subtraction); a cleared greatest example is looked up again among the
-- day's hours (their text starts with the day's date).
-- +goose StatementBegin
CREATE TRIGGER problems_daily_update AFTER UPDATE ON problems_hourly
WHEN NEW.hour IS OLD.hour AND NEW.contract_name IS OLD.contract_name AND NEW.contract_version IS OLD.contract_version
    AND NEW.rule IS OLD.rule AND NEW.step IS OLD.step AND NEW.message_class IS OLD.message_class BEGIN
    INSERT INTO problems_daily (day, contract_name, contract_version, rule, step, message_class)
    SELECT SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC', NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class
    WHERE NOT EXISTS (SELECT 1 FROM problems_daily WHERE day = SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = NEW.contract_name
        AND contract_version = NEW.contract_version AND rule = NEW.rule AND step = NEW.step AND message_class = NEW.message_class);
    UPDATE problems_daily SET n = n + NEW.n - OLD.n,
        example_thread = CASE
            WHEN NEW.example_thread < OLD.example_thread AND example_thread = OLD.example_thread THEN
                COALESCE((SELECT MAX(x.example_thread) FROM problems_hourly x
                    WHERE x.hour >= SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) AND x.hour < date(SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10), '+1 day')
                    AND x.contract_name = NEW.contract_name AND x.contract_version = NEW.contract_version
                    AND x.rule = NEW.rule AND x.step = NEW.step AND x.message_class = NEW.message_class), '')
            WHEN NEW.example_thread > example_thread THEN NEW.example_thread
            ELSE example_thread END
    WHERE day = SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = NEW.contract_name AND contract_version = NEW.contract_version
        AND rule = NEW.rule AND step = NEW.step AND message_class = NEW.message_class;
END;
-- +goose StatementEnd
-- A key changed (nothing does today): out of the old day's row, into the
-- new one's.
-- +goose StatementBegin
CREATE TRIGGER problems_daily_rekey AFTER UPDATE ON problems_hourly
WHEN NOT (NEW.hour IS OLD.hour AND NEW.contract_name IS OLD.contract_name AND NEW.contract_version IS OLD.contract_version
    AND NEW.rule IS OLD.rule AND NEW.step IS OLD.step AND NEW.message_class IS OLD.message_class) BEGIN
    UPDATE problems_daily SET n = n - OLD.n,
        example_thread = CASE WHEN example_thread = OLD.example_thread THEN
                COALESCE((SELECT MAX(x.example_thread) FROM problems_hourly x
                    WHERE x.hour >= SUBSTR(REPLACE(OLD.hour, 'T', ' '), 1, 10) AND x.hour < date(SUBSTR(REPLACE(OLD.hour, 'T', ' '), 1, 10), '+1 day')
                    AND x.contract_name = OLD.contract_name AND x.contract_version = OLD.contract_version
                    AND x.rule = OLD.rule AND x.step = OLD.step AND x.message_class = OLD.message_class), '')
            ELSE example_thread END
    WHERE day = SUBSTR(REPLACE(OLD.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = OLD.contract_name AND contract_version = OLD.contract_version
        AND rule = OLD.rule AND step = OLD.step AND message_class = OLD.message_class;
    INSERT INTO problems_daily (day, contract_name, contract_version, rule, step, message_class)
    SELECT SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC', NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class
    WHERE NOT EXISTS (SELECT 1 FROM problems_daily WHERE day = SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = NEW.contract_name
        AND contract_version = NEW.contract_version AND rule = NEW.rule AND step = NEW.step AND message_class = NEW.message_class);
    UPDATE problems_daily SET n = n + NEW.n,
        example_thread = CASE WHEN NEW.example_thread > example_thread THEN NEW.example_thread ELSE example_thread END
    WHERE day = SUBSTR(REPLACE(NEW.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = NEW.contract_name AND contract_version = NEW.contract_version
        AND rule = NEW.rule AND step = NEW.step AND message_class = NEW.message_class;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER problems_daily_delete AFTER DELETE ON problems_hourly BEGIN
    UPDATE problems_daily SET n = n - OLD.n,
        example_thread = CASE WHEN example_thread = OLD.example_thread THEN
                COALESCE((SELECT MAX(x.example_thread) FROM problems_hourly x
                    WHERE x.hour >= SUBSTR(REPLACE(OLD.hour, 'T', ' '), 1, 10) AND x.hour < date(SUBSTR(REPLACE(OLD.hour, 'T', ' '), 1, 10), '+1 day')
                    AND x.contract_name = OLD.contract_name AND x.contract_version = OLD.contract_version
                    AND x.rule = OLD.rule AND x.step = OLD.step AND x.message_class = OLD.message_class), '')
            ELSE example_thread END
    WHERE day = SUBSTR(REPLACE(OLD.hour, 'T', ' '), 1, 10) || ' 00:00:00 +0000 UTC' AND contract_name = OLD.contract_name AND contract_version = OLD.contract_version
        AND rule = OLD.rule AND step = OLD.step AND message_class = OLD.message_class;
END;
-- +goose StatementEnd
-- The reads of the Problems view and the process map, from the index alone:
-- at a million threads the roll-ups' rows of one window lie on as many
-- table pages as rows. problems_daily is stored in its key's order (WITHOUT
-- ROWID, above); the roll-up writes problems_hourly a few times a minute.
-- The process map's rows are updated on append (n): covering them costs
-- those updates an index entry, the price of a map that reads no table row.
CREATE INDEX IF NOT EXISTS problems_hourly_read ON problems_hourly (hour, contract_name, contract_version, rule, step, message_class, n, example_thread);
CREATE INDEX IF NOT EXISTS process_map_hourly_read ON process_map_hourly (contract_name, contract_version, hour, kind, from_step, to_step, bucket, n,
    example_thread);
DROP INDEX IF EXISTS process_map_hourly_hour;
CREATE INDEX IF NOT EXISTS process_map_daily_read ON process_map_daily (contract_name, contract_version, day, kind, from_step, to_step, bucket, n,
    example_thread);
DROP INDEX IF EXISTS process_map_daily_day;
-- The Problems view's running threads (status active, unhealthy) with
-- their cause, from the partial index alone: a 30-day report read their
-- rows one heap page each (5,000 of them at a million seeded threads,
-- 440 ms cold).
CREATE INDEX IF NOT EXISTS threads_active_unhealthy_read ON threads (created_at, id, contract_name, contract_version, first_issue_type,
    first_issue_step, first_issue_message, status, health) WHERE status = 'active' AND health IN ('FAILED', 'VIOLATED');
DROP INDEX IF EXISTS threads_active_unhealthy;

-- +goose Down
CREATE INDEX IF NOT EXISTS threads_active_unhealthy ON threads (created_at) WHERE status = 'active' AND health IN ('FAILED', 'VIOLATED');
DROP INDEX IF EXISTS threads_active_unhealthy_read;
CREATE INDEX IF NOT EXISTS process_map_daily_day ON process_map_daily (contract_name, contract_version, day);
DROP INDEX IF EXISTS process_map_daily_read;
CREATE INDEX IF NOT EXISTS process_map_hourly_hour ON process_map_hourly (contract_name, contract_version, hour);
DROP INDEX IF EXISTS process_map_hourly_read;
DROP INDEX IF EXISTS problems_hourly_read;
DROP TRIGGER problems_daily_delete;
DROP TRIGGER problems_daily_rekey;
DROP TRIGGER problems_daily_update;
DROP TRIGGER problems_daily_insert;
DROP TABLE problems_daily;
