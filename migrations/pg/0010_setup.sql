-- 0012_setup.sql - the one-time setup token, and each user's last sign-in.
-- Same as the SQLite schema's 0013, which says what each column is.

CREATE TABLE setup_token (
    id         integer PRIMARY KEY CHECK (id = 1),
    hash       bytea NOT NULL,
    expires_at bigint NOT NULL
);

ALTER TABLE users ADD COLUMN last_signin_at bigint NOT NULL DEFAULT 0;
