-- 0009_track.sql - a link's visits may go unrecorded (track: false): the
-- redirect then writes no click for it (src/redirect/redirect.c). Every
-- link made before this step is tracked, as it always was. Same column as
-- the SQLite schema's 0010.

ALTER TABLE links ADD COLUMN track BOOLEAN NOT NULL DEFAULT true;
