-- 0001_init.sql - shortd's SQLite schema, version 1: what store.h keeps,
-- with times as INTEGER milliseconds since the epoch and days as INTEGER
-- days since the epoch.
--
-- A store's open() runs the files after the database's PRAGMA user_version,
-- in one transaction, and sets user_version to the last one's number; a new
-- database runs them all. Never edit a migration that has shipped: add the
-- next file instead.
--
-- Each statement is one line: SQLite keeps the text of a CREATE statement as
-- it was written (sqlite_master, .schema), so these lines are those that
-- made every database so far, double spaces included.

CREATE TABLE meta (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE api_keys (  id INTEGER PRIMARY KEY, name TEXT NOT NULL, hash BLOB NOT NULL UNIQUE,  admin INTEGER NOT NULL, created_at INTEGER NOT NULL,  revoked_at INTEGER NOT NULL DEFAULT 0);
CREATE TABLE links (  id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, owner INTEGER NOT NULL,  url TEXT, title TEXT, note TEXT, tags TEXT,  created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL DEFAULT 0,  changed_at INTEGER NOT NULL, state INTEGER NOT NULL DEFAULT 0,  permanent INTEGER NOT NULL DEFAULT 0, clicks INTEGER NOT NULL DEFAULT 0,  bot_clicks INTEGER NOT NULL DEFAULT 0);
CREATE INDEX links_owner ON links(owner, created_at DESC, code DESC);
CREATE INDEX links_created ON links(created_at DESC, code DESC);
CREATE INDEX links_live_url ON links(owner, url) WHERE state = 0;
CREATE INDEX links_expiry ON links(expires_at) WHERE expires_at > 0 AND url IS NOT NULL;
CREATE TABLE daily (  code TEXT NOT NULL, day INTEGER NOT NULL, clicks INTEGER NOT NULL,  bots INTEGER NOT NULL, uniques INTEGER NOT NULL,  PRIMARY KEY (code, day)) WITHOUT ROWID;
CREATE INDEX daily_day ON daily(day, clicks DESC);
CREATE TABLE dims (  code TEXT NOT NULL, day INTEGER NOT NULL, dim INTEGER NOT NULL, value TEXT NOT NULL,  n INTEGER NOT NULL, PRIMARY KEY (code, day, dim, value)) WITHOUT ROWID;
CREATE INDEX dims_day ON dims(day);
CREATE TABLE visitors (  day INTEGER NOT NULL, code TEXT NOT NULL, v INTEGER NOT NULL,  PRIMARY KEY (day, code, v)) WITHOUT ROWID;
CREATE TABLE recent (  id INTEGER PRIMARY KEY, code TEXT NOT NULL, ts INTEGER NOT NULL, referrer TEXT NOT NULL,  country TEXT NOT NULL, device TEXT NOT NULL, browser TEXT NOT NULL);
CREATE INDEX recent_code ON recent(code, id);
CREATE TABLE idempotency (  key_id INTEGER NOT NULL, idem TEXT NOT NULL, fingerprint BLOB NOT NULL,  status INTEGER NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,  PRIMARY KEY (key_id, idem)) WITHOUT ROWID;
CREATE INDEX idempotency_created ON idempotency(created_at);
CREATE TABLE blocklist (host TEXT PRIMARY KEY, created_at INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta(k, v) VALUES ('counter', 0);
