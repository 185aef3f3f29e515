-- pgfloor.sql - the least a PostgreSQL server spends on a click at a
-- million links: a row holding nothing but a count (shortd's rows carry
-- their dimensions too), keyed by (code, day) as the store's day rows are,
-- stored from an array in one statement a batch: no client, no protocol,
-- no shortd code in the figure. The same floor bench/floorcost.c gives for
-- SQLite; bench/HISTORY.md quotes both.
--
--   tests/pg.sh sh -c 'psql -X -q "$SHORTD_TEST_PG" -f bench/pgfloor.sql'
--
-- Prints, per batch of 100,000 clicks on codes drawn uniformly (about
-- 95,000 distinct), the wall-clock µs a row of the backend (alone on an
-- idle machine, so its CPU; the WAL writer's and checkpointer's are not in
-- it) for: an upsert into the keyed day table, an insert into a table with
-- no index, and into one with a (code, day) index as link_days_pending
-- has. tests/pg.sh runs the server with fsync off.
\set ON_ERROR_STOP on
CREATE TABLE floor_days (code text NOT NULL, day int NOT NULL, n int NOT NULL,
                        PRIMARY KEY (code, day));
CREATE TABLE floor_appended (code text NOT NULL, day int NOT NULL, n int NOT NULL);
CREATE TABLE floor_appended_ix (code text NOT NULL, day int NOT NULL, n int NOT NULL);
CREATE INDEX ON floor_appended_ix (code, day);
INSERT INTO floor_days SELECT lpad(to_hex(i), 8, '0'), 0, 1 FROM generate_series(0, 999999) i;
ANALYZE floor_days;
CREATE TEMP TABLE result (batch int, rows int, keyed float8, append float8, append_ix float8);
DO $$
DECLARE
    codes text[];
    t0 timestamptz;
    k float8; a float8; ai float8;
BEGIN
    PERFORM setseed(0.31);
    FOR b IN 1..5 LOOP
        SELECT array_agg(c ORDER BY c) INTO codes FROM (
            SELECT DISTINCT lpad(to_hex((random() * 999999)::int), 8, '0') AS c
            FROM generate_series(1, 100000)) s;
        t0 := clock_timestamp();
        INSERT INTO floor_days SELECT c, 1, 1 FROM unnest(codes) c
            ON CONFLICT (code, day) DO UPDATE SET n = floor_days.n + 1;
        k := extract(epoch FROM clock_timestamp() - t0) * 1e6 / cardinality(codes);
        t0 := clock_timestamp();
        INSERT INTO floor_appended SELECT c, 1, 1 FROM unnest(codes) c;
        a := extract(epoch FROM clock_timestamp() - t0) * 1e6 / cardinality(codes);
        t0 := clock_timestamp();
        INSERT INTO floor_appended_ix SELECT c, 1, 1 FROM unnest(codes) c;
        ai := extract(epoch FROM clock_timestamp() - t0) * 1e6 / cardinality(codes);
        INSERT INTO result VALUES (b, cardinality(codes), k, a, ai);
    END LOOP;
END $$;
SELECT batch, rows, round(keyed::numeric, 2) AS keyed_us, round(append::numeric, 2) AS append_us,
       round(append_ix::numeric, 2) AS append_index_us FROM result ORDER BY batch;
