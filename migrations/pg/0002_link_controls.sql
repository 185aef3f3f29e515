-- 0002_link_controls.sql - link controls: password gates, custom domains,
-- A/B variants, UTM, click limits; the destination history of edits and the
-- registered custom domains. Same columns and tables as store_sqlite.c's
-- schema_v2.
--
-- Distribution: link_history is keyed (code, seq), so it is distributed by
-- code with links; domains is keyed by host, small, a reference table.

ALTER TABLE links
    ADD COLUMN password   text,
    ADD COLUMN domain     text COLLATE "C",
    ADD COLUMN variants   text,
    ADD COLUMN utm        text,
    ADD COLUMN dest       text,
    ADD COLUMN max_clicks bigint NOT NULL DEFAULT 0,
    ADD COLUMN used       bigint NOT NULL DEFAULT 0;

-- Every change of a link's destination, numbered per code.
CREATE TABLE link_history (
    code       text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    old_url    text,
    new_url    text,
    changed_at bigint NOT NULL,
    by_key     bigint NOT NULL,
    PRIMARY KEY (code, seq)
);

-- Custom short hosts (lowercase, no port, no trailing dot), one owner each.
CREATE TABLE domains (
    host       text COLLATE "C" PRIMARY KEY,
    owner      bigint NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX domains_owner ON domains (owner, host);
