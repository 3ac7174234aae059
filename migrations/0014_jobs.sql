-- Scheduled work (/every, /at): a job runs PROMPT in its chat's own thread, as if its
-- creator had sent it, at next_run (unix seconds). A run missed while the gateway was
-- down runs once at start: next_run is then computed from that run, not from each tick.
CREATE TABLE jobs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    platform    TEXT NOT NULL,
    chat        TEXT NOT NULL,
    topic       TEXT,
    -- The creator's platform user id: the run is theirs, and /unschedule is theirs too.
    creator     TEXT NOT NULL,
    private     INTEGER NOT NULL,
    -- 'every SECS', 'cron PATTERN' or 'at UNIX'.
    schedule    TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    next_run    INTEGER NOT NULL,
    runs        INTEGER NOT NULL DEFAULT 0,
    last_run    INTEGER,
    last_result TEXT,
    created_at  INTEGER NOT NULL
);
CREATE INDEX jobs_by_chat ON jobs (platform, chat, topic);
CREATE INDEX jobs_due ON jobs (next_run);
