-- 0011_sites.sql - site analytics (src/sites/): the sites whose pages send
-- beacons, the hosts that name each one (a host belongs to one site), their
-- read tokens (a keyed hash, as API keys are stored), and one row per site
-- and UTC day holding its page views, its UA-detected bot hits and its
-- dimension tallies in the packed form of link_days.dims (dayrow.h).
-- sites.pv_total is the all-time page views of a site with a badge: it is
-- never pruned with the days. The numbering leaves room for other branches'
-- steps; the loop needs no gapless sequence (migrations.h).

CREATE TABLE sites (
    id         TEXT PRIMARY KEY,
    owner      INTEGER NOT NULL,
    badge      INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    pv_total   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sites_owner ON sites(owner);

CREATE TABLE site_hosts (
    host TEXT PRIMARY KEY,
    site TEXT NOT NULL
);
CREATE INDEX site_hosts_site ON site_hosts(site);

CREATE TABLE site_tokens (
    id         INTEGER PRIMARY KEY,
    site       TEXT NOT NULL,
    hash       BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE INDEX site_tokens_site ON site_tokens(site);

CREATE TABLE site_days (
    site TEXT NOT NULL,
    day  INTEGER NOT NULL,
    pv   INTEGER NOT NULL,
    bots INTEGER NOT NULL,
    dims BLOB,
    PRIMARY KEY (site, day)
);
CREATE INDEX site_days_day ON site_days(day);
