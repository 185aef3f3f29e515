-- 0005_imported_clicks.sql - the part of a link's kept totals (clicks and
-- bot_clicks) that `shortd import` brought from another shortener without
-- the days they happened on (src/import/import.h): shown as such in the
-- stats ("imported_clicks"), never told apart by day.

ALTER TABLE links ADD COLUMN imported_clicks INTEGER NOT NULL DEFAULT 0;
