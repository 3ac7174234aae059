-- Where each platform's update stream continues (Telegram: the next getUpdates offset),
-- so a restart neither skips nor replays updates.
CREATE TABLE platform_offsets (
    platform    TEXT PRIMARY KEY,
    next_offset INTEGER NOT NULL
);
