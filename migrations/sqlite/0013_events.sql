-- 0013_events.sql - events out (src/events/): the sinks events go to, each
-- sink's durable position in each source, the outbox of link events and
-- the archive of batches no retry delivered.
--
-- sinks: kind is 'webhook', 'ingest' or 'redis-stream'; types the event
-- types wanted, comma separated ('' for all); owner (-1: any) and domain
-- (NULL: any) narrow them; secret and secret_old are the signing secrets
-- (whsec_...), the old one valid until the next rotation; options is a JSON
-- object of the kind's own settings (stream, maxlen).
-- sink_positions: source 'links' (the outbox: the seq delivered last,
-- once in all across a cluster, under a lease) or 'journal:<id>' (a node's
-- click journal: the position after the last record delivered).
-- event_outbox: link events, written in the transaction of the change;
-- body is the event's JSON text, fixed then.
-- event_failed: a batch that exhausted its retries; body and its SHA-256
-- as sent; nothing here is deleted, resolving only records who and why.

CREATE TABLE sinks (  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, endpoint TEXT NOT NULL,  types TEXT NOT NULL DEFAULT '', owner INTEGER NOT NULL DEFAULT -1, domain TEXT,  secret TEXT NOT NULL, secret_old TEXT, options TEXT NOT NULL DEFAULT '{}',  created_at INTEGER NOT NULL, deleted_at INTEGER NOT NULL DEFAULT 0);
CREATE TABLE sink_positions (  sink INTEGER NOT NULL, source TEXT NOT NULL, pos INTEGER NOT NULL,  holder TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0,  PRIMARY KEY (sink, source)) WITHOUT ROWID;
CREATE TABLE event_outbox (  seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,  at INTEGER NOT NULL, code TEXT NOT NULL, owner INTEGER NOT NULL, domain TEXT,  body TEXT NOT NULL);
CREATE TABLE event_failed (  id INTEGER PRIMARY KEY, sink INTEGER NOT NULL, source TEXT NOT NULL,  first_pos INTEGER NOT NULL, last_pos INTEGER NOT NULL, events INTEGER NOT NULL,  body TEXT NOT NULL, sha256 TEXT NOT NULL, attempts INTEGER NOT NULL,  last_error TEXT NOT NULL, first_failed_at INTEGER NOT NULL, archived_at INTEGER NOT NULL,  replays INTEGER NOT NULL DEFAULT 0, last_replay_at INTEGER NOT NULL DEFAULT 0,  last_replay_result TEXT NOT NULL DEFAULT '',  resolved_at INTEGER NOT NULL DEFAULT 0, resolved_by TEXT, resolved_reason TEXT);
CREATE INDEX event_failed_open ON event_failed(resolved_at, id);
