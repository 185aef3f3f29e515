-- 0013_pending_days.sql - clicks stored as they come, merged later
-- (store_stats.h, "Appending"; the SQLite schema's 0014).
--
-- link_days_pending: each store batch's link days, packed as in link_days,
-- inserted as they are: an UPDATE of a link_days row writes a new version
-- of the whole row and its index entries, an insert here only the row and
-- one index entry. Every read of the stats adds these rows to link_days';
-- compacting walks them in (code, day) order, merges each link day's rows
-- of every batch into link_days at once and deletes them in the same
-- transaction. Several nodes append at once, so a link day may have a row
-- of each node's batch: no key is unique here.
-- day_batches: the batch numbers, shared by the nodes.

CREATE TABLE link_days_pending (
    batch    bigint NOT NULL,
    code     text COLLATE "C" NOT NULL,
    day      bigint NOT NULL,
    clicks   bigint NOT NULL,
    bots     bigint NOT NULL,
    uniques  bigint NOT NULL,
    dims     bytea,
    visitors bytea,
    recent   bytea
);
CREATE INDEX link_days_pending_key ON link_days_pending (code, day);
CREATE SEQUENCE day_batches;
