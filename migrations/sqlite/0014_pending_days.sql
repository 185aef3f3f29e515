-- 0014_pending_days.sql - clicks stored as they come, merged later
-- (store_stats.h, "Appending").
--
-- link_days_pending: the link days of one store batch, each a packed row as
-- in link_days, appended in (batch, code, day) order: the end of the tree,
-- so storing a click rewrites no page of link_days. Every read of the stats
-- adds these rows to link_days'; compacting merges them into link_days in
-- key order and deletes them in the same transaction.
-- day_batches: the batches that still have rows here, so that a read of one
-- link seeks once per batch instead of scanning them.

CREATE TABLE link_days_pending (  batch INTEGER NOT NULL, code TEXT NOT NULL, day INTEGER NOT NULL,  clicks INTEGER NOT NULL, bots INTEGER NOT NULL, uniques INTEGER NOT NULL,  dims BLOB, visitors BLOB, recent BLOB, PRIMARY KEY (batch, code, day)) WITHOUT ROWID;
CREATE TABLE day_batches (batch INTEGER PRIMARY KEY);
