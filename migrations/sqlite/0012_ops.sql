-- 0012_ops.sql - what the operations checks and alerts keep (src/ops/).
--
-- ops_backups: one row per backup made (`shortd backup`, or the server's
-- own every backup-every): when it ended, its size, the node that made it.
-- The backup check reads the newest. The file's path is not kept: a row is
-- a fact for the check, not a catalogue of files.
--
-- ops_leases: a named lease a node holds until expires_at (ms), renewed
-- while it lives: the "alerts" lease says which node of a cluster sends
-- alerts; another node takes it only once it has expired.

CREATE TABLE ops_backups (
    id       INTEGER PRIMARY KEY,
    ended_at INTEGER NOT NULL,
    bytes    INTEGER NOT NULL,
    node     TEXT NOT NULL
);
CREATE INDEX ops_backups_ended ON ops_backups (ended_at);

CREATE TABLE ops_leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
