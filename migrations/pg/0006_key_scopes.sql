-- 0006_key_scopes.sql - what an API key may do (store_keys.h): the user it
-- belongs to (NULL for a key made before users: it acts with its own admin
-- flag), its scopes as a bit set (KEY_SCOPE_*: 1 links:read, 2 links:write,
-- 4 stats:read, 8 admin; NULL is the full set, so every key made before this
-- keeps its rights), the one custom domain it is limited to (NULL: none),
-- and when it was last used (ms, NULL: never; written at most once a
-- minute). Same columns as the SQLite schema's 0007.

ALTER TABLE api_keys ADD COLUMN user_id bigint;
ALTER TABLE api_keys ADD COLUMN scopes integer;
ALTER TABLE api_keys ADD COLUMN domain text COLLATE "C";
ALTER TABLE api_keys ADD COLUMN last_used_at bigint;
