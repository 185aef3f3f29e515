-- 0006_users.sql - people who sign in to the dashboard, and their sessions.
--
-- A user has a name (unique; lowercase, src/links/users.h), an Argon2id
-- password hash (src/links/pwhash.h) and a role. key_id is the API key row
-- made for the user when it was created: the user's links, domains and
-- idempotency records are that key's (links.owner, domains.owner), so a
-- session acts exactly as that key does. A user is never removed, only
-- disabled (disabled_at), so its key id keeps naming its links.
--
-- A session is known by the keyed hash of its token (the cookie holds the
-- token); it ends at expires_at, or earlier when unused for the configured
-- idle time after seen_at. Rows live in the store, so every node of a
-- cluster sees a sign-in and a sign-out at once.

CREATE TABLE users (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    pwhash      TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
    key_id      INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sessions (
    hash       BLOB PRIMARY KEY,
    user_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
