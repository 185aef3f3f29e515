-- 0011_ops.sql - what the operations checks and alerts keep (src/ops/):
-- the backups made and the leases of one node among many. Same tables as
-- the SQLite schema's 0012, which says what each holds.

CREATE TABLE ops_backups (
    id       BIGSERIAL PRIMARY KEY,
    ended_at BIGINT NOT NULL,
    bytes    BIGINT NOT NULL,
    node     TEXT NOT NULL
);
CREATE INDEX ops_backups_ended ON ops_backups (ended_at);

CREATE TABLE ops_leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
