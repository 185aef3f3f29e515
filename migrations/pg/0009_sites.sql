-- 0010_sites.sql - site analytics (src/sites/): the same tables as the
-- SQLite schema's 0011 (read its comment).

CREATE TABLE sites (
    id         text COLLATE "C" PRIMARY KEY,
    owner      bigint NOT NULL,
    badge      boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL,
    pv_total   bigint NOT NULL DEFAULT 0
);
CREATE INDEX sites_owner ON sites(owner);

CREATE TABLE site_hosts (
    host text COLLATE "C" PRIMARY KEY,
    site text COLLATE "C" NOT NULL
);
CREATE INDEX site_hosts_site ON site_hosts(site);

CREATE TABLE site_tokens (
    id         bigserial PRIMARY KEY,
    site       text COLLATE "C" NOT NULL,
    hash       bytea NOT NULL UNIQUE,
    created_at bigint NOT NULL
);
CREATE INDEX site_tokens_site ON site_tokens(site);

CREATE TABLE site_days (
    site text COLLATE "C" NOT NULL,
    day  bigint NOT NULL,
    pv   bigint NOT NULL,
    bots bigint NOT NULL,
    dims bytea,
    PRIMARY KEY (site, day)
);
CREATE INDEX site_days_day ON site_days(day);
