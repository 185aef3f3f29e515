-- 0012_events.sql - events out (src/events/): the sinks, each sink's
-- durable position in each source, the outbox of link events and the
-- archive of batches no retry delivered. Same tables and columns as the
-- SQLite schema's 0013, which describes them.

CREATE TABLE sinks (
    id         bigserial PRIMARY KEY,
    kind       text NOT NULL,
    endpoint   text NOT NULL,
    types      text NOT NULL DEFAULT '',
    owner      bigint NOT NULL DEFAULT -1,
    domain     text COLLATE "C",
    secret     text NOT NULL,
    secret_old text,
    options    text NOT NULL DEFAULT '{}',
    created_at bigint NOT NULL,
    deleted_at bigint NOT NULL DEFAULT 0
);
CREATE TABLE sink_positions (
    sink        bigint NOT NULL,
    source      text COLLATE "C" NOT NULL,
    pos         bigint NOT NULL,
    holder      text NOT NULL DEFAULT '',
    lease_until bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (sink, source)
);
CREATE TABLE event_outbox (
    seq    bigserial PRIMARY KEY,
    id     text COLLATE "C" NOT NULL UNIQUE,
    type   text NOT NULL,
    at     bigint NOT NULL,
    code   text COLLATE "C" NOT NULL,
    owner  bigint NOT NULL,
    domain text COLLATE "C",
    body   text NOT NULL
);
CREATE TABLE event_failed (
    id                 bigserial PRIMARY KEY,
    sink               bigint NOT NULL,
    source             text NOT NULL,
    first_pos          bigint NOT NULL,
    last_pos           bigint NOT NULL,
    events             bigint NOT NULL,
    body               text NOT NULL,
    sha256             text NOT NULL,
    attempts           bigint NOT NULL,
    last_error         text NOT NULL,
    first_failed_at    bigint NOT NULL,
    archived_at        bigint NOT NULL,
    replays            bigint NOT NULL DEFAULT 0,
    last_replay_at     bigint NOT NULL DEFAULT 0,
    last_replay_result text NOT NULL DEFAULT '',
    resolved_at        bigint NOT NULL DEFAULT 0,
    resolved_by        text,
    resolved_reason    text
);
CREATE INDEX event_failed_open ON event_failed (resolved_at, id);
