-- Where a message was sent (Discord: its channel), for a platform that replays nothing
-- to a new session: at start each place is read back from its newest message kept here.
ALTER TABLE inbox ADD COLUMN place TEXT;
CREATE INDEX inbox_places ON inbox (platform, place, id) WHERE place IS NOT NULL;
