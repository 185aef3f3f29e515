-- 0010_track.sql - a link's visits may go unrecorded (track: false): the
-- redirect then writes no click for it (src/redirect/redirect.c). Every
-- link made before this step is tracked, as it always was.

ALTER TABLE links ADD COLUMN track INTEGER NOT NULL DEFAULT 1;
