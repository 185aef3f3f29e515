-- 0002_link_controls.sql - link controls: passwords, custom domains, A/B
-- variants, UTM, click limits, the destination history and the registered
-- domains.

ALTER TABLE links ADD COLUMN password TEXT;
ALTER TABLE links ADD COLUMN domain TEXT;
ALTER TABLE links ADD COLUMN variants TEXT;
ALTER TABLE links ADD COLUMN utm TEXT;
ALTER TABLE links ADD COLUMN dest TEXT;
ALTER TABLE links ADD COLUMN max_clicks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE links ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
CREATE TABLE link_history (  code TEXT NOT NULL, seq INTEGER NOT NULL, old_url TEXT, new_url TEXT,  changed_at INTEGER NOT NULL, by_key INTEGER NOT NULL,  PRIMARY KEY (code, seq)) WITHOUT ROWID;
CREATE TABLE domains (  host TEXT PRIMARY KEY, owner INTEGER NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX domains_owner ON domains(owner, host);
