-- 0013_setup.sql - the one-time setup token, and each user's last sign-in.
--
-- The first start of an empty store (no users, no API keys) makes a setup
-- token that opens /setup, where the first admin account is made
-- (src/links/users.h). Only its hash is kept, in the store, so every node of
-- a cluster accepts it; there is at most one (id 1): a later start before
-- it was used replaces it, and using it removes it. It stops at expires_at.
--
-- last_signin_at is when the user last signed in (0: never), for the
-- dashboard's Users page.

CREATE TABLE setup_token (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    hash       BLOB NOT NULL,
    expires_at INTEGER NOT NULL
);

ALTER TABLE users ADD COLUMN last_signin_at INTEGER NOT NULL DEFAULT 0;
