-- 0003_packed_analytics.sql - a link's day is one row.
--
-- Version 1 kept one row per day (daily), one per dimension value (dims),
-- one per visitor (visitors) and one per recent click (recent): a click cost
-- about fifteen row writes. Now a click's link and day are one row of
-- link_days, whose blobs shortd encodes and merges (src/clicks/dayrow.h):
--   dims      'D', then per tally: dim, length, value bytes, count (varint)
--   recent    'R', then per click, oldest first: ts (varint), and four
--             (length, bytes): referrer, country, device, browser
--   visitors  'S' and sorted 8-byte little-endian hashes, or 'H' and a
--             HyperLogLog sketch; NULL once the day's salt is gone
-- links.clicks and links.bot_clicks now hold the totals of pruned days only;
-- the all-time totals are those plus the sums over link_days.
--
-- The old rows are converted here, in the migration's transaction. Visitor
-- hashes are not carried over (the unique counts are): on the day of the
-- upgrade a visitor seen before it may count as unique once more.

CREATE TABLE link_days (
    code     text COLLATE "C" NOT NULL,
    day      bigint NOT NULL,
    clicks   bigint NOT NULL,
    bots     bigint NOT NULL,
    uniques  bigint NOT NULL,
    dims     bytea,
    visitors bytea,
    recent   bytea,
    PRIMARY KEY (code, day)
);
CREATE INDEX link_days_day ON link_days (day);
CREATE INDEX link_days_visitors ON link_days (day) WHERE visitors IS NOT NULL;

CREATE FUNCTION pg_temp.shortd_varint(v bigint) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    result bytea := ''::bytea;
BEGIN
    LOOP
        IF v < 128 THEN
            RETURN result || set_byte('\x00'::bytea, 0, v::int);
        END IF;
        result := result || set_byte('\x00'::bytea, 0, ((v & 127) | 128)::int);
        v := v >> 7;
    END LOOP;
END $$;

-- A length byte and the bytes of a text (dimension values are at most 128
-- bytes, as shortd clamps them).
CREATE FUNCTION pg_temp.shortd_str(s text) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
    SELECT set_byte('\x00'::bytea, 0, octet_length(convert_to(s, 'UTF8')))
           || convert_to(s, 'UTF8')
$$;

INSERT INTO link_days (code, day, clicks, bots, uniques, dims)
SELECT d.code, d.day, d.clicks, d.bots, d.uniques,
       (SELECT '\x44'::bytea || string_agg(set_byte('\x00'::bytea, 0, x.dim)
                                           || pg_temp.shortd_str(x.value)
                                           || pg_temp.shortd_varint(x.n),
                                           ''::bytea ORDER BY x.dim, x.value)
        FROM dims x WHERE x.code = d.code AND x.day = d.day)
FROM daily d;

-- A link's newest clicks go to the row of its newest day.
UPDATE link_days AS t SET recent = r.blob
FROM (SELECT code,
             '\x52'::bytea || string_agg(pg_temp.shortd_varint(ts)
                                         || pg_temp.shortd_str(referrer)
                                         || pg_temp.shortd_str(country)
                                         || pg_temp.shortd_str(device)
                                         || pg_temp.shortd_str(browser),
                                         ''::bytea ORDER BY id) AS blob
      FROM (SELECT *, row_number() OVER (PARTITION BY code ORDER BY id DESC) AS rn
            FROM recent) AS newest
      WHERE rn <= 20
      GROUP BY code) AS r
WHERE t.code = r.code AND t.day = (SELECT max(day) FROM link_days m WHERE m.code = r.code);

UPDATE links AS l SET clicks = l.clicks - s.clicks, bot_clicks = l.bot_clicks - s.bots
FROM (SELECT code, sum(clicks)::bigint AS clicks, sum(bots)::bigint AS bots
      FROM daily GROUP BY code) AS s
WHERE l.code = s.code;

DROP TABLE daily, dims, visitors, recent;
