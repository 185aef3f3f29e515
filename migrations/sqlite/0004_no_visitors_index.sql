-- 0004_no_visitors_index.sql - no index over the link days that still hold
-- visitors. Every UPDATE that stores clicks sets 'visitors', and SQLite then
-- rewrote that index's entry of the row: two more B-tree writes per link
-- day. The daily prune finds those rows by day instead, from where the last
-- prune stopped ('visitors_from', recorded here from the index before it
-- goes).

INSERT OR REPLACE INTO meta(k, v) SELECT 'visitors_from', CAST(coalesce(min(day), 0) AS TEXT) FROM link_days WHERE visitors IS NOT NULL;
DROP INDEX link_days_visitors;
