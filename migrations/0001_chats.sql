-- One row per conversation: the chat -> Codex thread mapping and what /status shows.
CREATE TABLE chats (
    chat_key        TEXT PRIMARY KEY,          -- "platform:chat[:topic]"
    thread_id       TEXT,                      -- NULL until the first turn of a new thread starts
    cwd             TEXT NOT NULL,
    turns           INTEGER NOT NULL DEFAULT 0,
    last_tokens     INTEGER,                   -- tokens of the latest model request (context fill)
    total_tokens    INTEGER,                   -- tokens over the thread's life
    context_window  INTEGER,
    created_at      INTEGER NOT NULL,          -- unix seconds
    updated_at      INTEGER NOT NULL
);

-- Threads a chat used before: replaced by /new or because their rollout was lost.
CREATE TABLE thread_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_key    TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('new', 'rollout_missing')),
    retired_at  INTEGER NOT NULL
);
CREATE INDEX thread_history_chat ON thread_history (chat_key);

-- User messages and final replies: the fallback when a rollout is gone.
CREATE TABLE transcript (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_key    TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text        TEXT NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX transcript_chat ON transcript (chat_key, id);
