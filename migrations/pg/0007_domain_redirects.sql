-- 0007_domain_redirects.sql - a custom domain's not-found redirects, as
-- Shlink has them: where GET / goes (base_url_redirect), where any other
-- path nothing serves goes (regular_404_redirect), and where a code that
-- opens nothing goes (invalid_short_url_redirect: unknown, expired,
-- deleted, disabled, used up). NULL: the settings' (src/redirect/notfound.c).
-- Same columns as the SQLite schema's 0008.

ALTER TABLE domains ADD COLUMN base_url_redirect TEXT;
ALTER TABLE domains ADD COLUMN regular_404_redirect TEXT;
ALTER TABLE domains ADD COLUMN invalid_short_url_redirect TEXT;
