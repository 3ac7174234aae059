-- Messages the gateway accepted, stored before the platform's offset moves past them, so
-- a restart or crash loses none: 'waiting' until the chat's actor takes it, 'running'
-- while it is handled (a row left 'running' was cut by a crash: told, not re-run), then
-- 'done'. The platform's own id for the message is the key: nothing runs twice.
CREATE TABLE inbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    platform    TEXT NOT NULL,
    message_key TEXT NOT NULL,
    -- The platform's update as it came (JSON), handled again after a restart.
    payload     TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT 'waiting'
                CHECK (state IN ('waiting', 'running', 'done')),
    accepted_at INTEGER NOT NULL,
    UNIQUE (platform, message_key)
);
CREATE INDEX inbox_unfinished ON inbox (platform, id) WHERE state != 'done';
