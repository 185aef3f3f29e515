-- 0003_packed_analytics.sql - a link's day is one row (src/clicks/dayrow.h)
-- instead of one row per dimension value, visitor and recent click.
--
-- After this file, in the same transaction, the C hook convert_v3() of
-- store_sqlite.c converts version 1's rows of each link's day (daily, dims,
-- and recent for its newest day) into its link_days row, leaves links.clicks
-- and bot_clicks with the totals of days no longer kept (pruned), and drops
-- daily, dims, visitors and recent. Visitor hashes are not carried over (the
-- unique counts are).

CREATE TABLE link_days (  id INTEGER PRIMARY KEY, code TEXT NOT NULL, day INTEGER NOT NULL,  clicks INTEGER NOT NULL, bots INTEGER NOT NULL, uniques INTEGER NOT NULL,  dims BLOB, visitors BLOB, recent BLOB, UNIQUE (code, day));
CREATE INDEX link_days_day ON link_days(day);
CREATE INDEX link_days_visitors ON link_days(day) WHERE visitors IS NOT NULL;
