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
-- up again among the day's hours when the greatest is cleared. Filled
-- from the hourly rows written so far.
CREATE TABLE problems_daily (
    day              TIMESTAMPTZ NOT NULL,
    contract_name    TEXT NOT NULL,
    contract_version INTEGER NOT NULL,
    rule             TEXT NOT NULL,
    step             TEXT NOT NULL,
    message_class    TEXT NOT NULL,
    n                BIGINT NOT NULL DEFAULT 0,
    example_thread   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (day, contract_name, contract_version, rule, step, message_class) INCLUDE (n, example_thread)
);
-- No roll-up writes between the fill below and the trigger (they wait).
LOCK TABLE problems_hourly IN SHARE ROW EXCLUSIVE MODE;
-- +goose StatementBegin
CREATE FUNCTION problems_daily_add(h TIMESTAMPTZ, cn TEXT, cv INTEGER, r TEXT, s TEXT, mc TEXT, dn BIGINT, ex TEXT, gone TEXT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d TIMESTAMPTZ := date_trunc('day', h AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
BEGIN
    INSERT INTO problems_daily (day, contract_name, contract_version, rule, step, message_class)
    VALUES (d, cn, cv, r, s, mc) ON CONFLICT DO NOTHING;
    UPDATE problems_daily p SET n = p.n + dn,
        example_thread = CASE
            WHEN gone <> '' AND p.example_thread = gone THEN COALESCE((SELECT MAX(x.example_thread) FROM problems_hourly x
                WHERE x.hour >= d AND x.hour < d + interval '1 day' AND x.contract_name = cn AND x.contract_version = cv
                AND x.rule = r AND x.step = s AND x.message_class = mc), '')
            WHEN ex > p.example_thread THEN ex
            ELSE p.example_thread END
    WHERE p.day = d AND p.contract_name = cn AND p.contract_version = cv AND p.rule = r AND p.step = s AND p.message_class = mc;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION problems_daily_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM problems_daily_add(NEW.hour, NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class,
            NEW.n, NEW.example_thread, '');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM problems_daily_add(OLD.hour, OLD.contract_name, OLD.contract_version, OLD.rule, OLD.step, OLD.message_class,
            -OLD.n, '', OLD.example_thread);
    ELSIF (NEW.hour, NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class)
        IS NOT DISTINCT FROM (OLD.hour, OLD.contract_name, OLD.contract_version, OLD.rule, OLD.step, OLD.message_class) THEN
        PERFORM problems_daily_add(NEW.hour, NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class,
            NEW.n - OLD.n, NEW.example_thread,
            CASE WHEN NEW.example_thread < OLD.example_thread THEN OLD.example_thread ELSE '' END);
    ELSE -- a key changed: out of the old day's row, into the new one's
        PERFORM problems_daily_add(OLD.hour, OLD.contract_name, OLD.contract_version, OLD.rule, OLD.step, OLD.message_class,
            -OLD.n, '', OLD.example_thread);
        PERFORM problems_daily_add(NEW.hour, NEW.contract_name, NEW.contract_version, NEW.rule, NEW.step, NEW.message_class,
            NEW.n, NEW.example_thread, '');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
INSERT INTO problems_daily (day, contract_name, contract_version, rule, step, message_class, n, example_thread)
SELECT date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', contract_name, contract_version, rule, step, message_class,
    SUM(n), MAX(example_thread)
FROM problems_hourly
GROUP BY date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', contract_name, contract_version, rule, step, message_class;
CREATE TRIGGER problems_daily_sync AFTER INSERT OR UPDATE OR DELETE ON problems_hourly
    FOR EACH ROW EXECUTE FUNCTION problems_daily_sync();
-- The reads of the Problems view and the process map, index-only: at a
-- million threads the roll-ups' rows of one window lie on as many heap
-- pages as rows (a 24-hour map read ~2,000 pages, 150-260 ms cold under
-- load; covered, 40). problems_daily's primary key covers it (above); the
-- roll-up writes problems_hourly a few times a minute. The process map's
-- rows are updated on append (n): covering them makes those updates
-- non-HOT (an index entry more per updated row), the price of a map that
-- reads no heap.
CREATE INDEX IF NOT EXISTS problems_hourly_read ON problems_hourly (hour, contract_name, contract_version, rule, step, message_class)
    INCLUDE (n, example_thread);
CREATE INDEX IF NOT EXISTS process_map_hourly_read ON process_map_hourly (contract_name, contract_version, hour)
    INCLUDE (kind, from_step, to_step, bucket, n, example_thread);
DROP INDEX IF EXISTS process_map_hourly_hour;
CREATE INDEX IF NOT EXISTS process_map_daily_read ON process_map_daily (contract_name, contract_version, day)
    INCLUDE (kind, from_step, to_step, bucket, n, example_thread);
DROP INDEX IF EXISTS process_map_daily_day;
-- The Problems view's running threads (status active, unhealthy) with
-- their cause, from the partial index alone: a 30-day report read their
-- rows one heap page each (5,000 of them at a million seeded threads,
-- 440 ms cold).
CREATE INDEX IF NOT EXISTS threads_active_unhealthy_read ON threads (created_at)
    INCLUDE (id, contract_name, contract_version, first_issue_type, first_issue_step, first_issue_message)
    WHERE status = 'active' AND health IN ('FAILED', 'VIOLATED');
DROP INDEX IF EXISTS threads_active_unhealthy;

-- +goose Down
CREATE INDEX IF NOT EXISTS threads_active_unhealthy ON threads (created_at) WHERE status = 'active' AND health IN ('FAILED', 'VIOLATED');
DROP INDEX IF EXISTS threads_active_unhealthy_read;
CREATE INDEX IF NOT EXISTS process_map_daily_day ON process_map_daily (contract_name, contract_version, day);
DROP INDEX IF EXISTS process_map_daily_read;
CREATE INDEX IF NOT EXISTS process_map_hourly_hour ON process_map_hourly (contract_name, contract_version, hour);
DROP INDEX IF EXISTS process_map_hourly_read;
DROP INDEX IF EXISTS problems_hourly_read;
DROP TRIGGER problems_daily_sync ON problems_hourly;
DROP FUNCTION problems_daily_sync();
DROP FUNCTION problems_daily_add(TIMESTAMPTZ, TEXT, INTEGER, TEXT, TEXT, TEXT, BIGINT, TEXT, TEXT);
DROP TABLE problems_daily;
