-- 0004_imported_clicks.sql - the part of a link's kept totals (clicks and
-- bot_clicks) that `shortd import` brought from another shortener without
-- the days they happened on (src/import/import.h): shown as such in the
-- stats ("imported_clicks"), never told apart by day. Same column as the
-- SQLite schema's 0005.

ALTER TABLE links ADD COLUMN imported_clicks bigint NOT NULL DEFAULT 0;
