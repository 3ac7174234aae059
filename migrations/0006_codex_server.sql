-- Which Codex server holds the chat's thread: 'local' (this machine's app-servers) or a
-- [[codex.remote]] worker's name. A thread is resumed only where its rollout lives.
-- NULL: not placed yet. Threads stored before workers existed are this machine's.
ALTER TABLE chats ADD COLUMN codex_server TEXT;
UPDATE chats SET codex_server = 'local' WHERE thread_id IS NOT NULL;
