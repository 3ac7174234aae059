-- What a person chose for their chat (/model, /effort, /cwd); NULL keeps the default.
-- /new keeps them: they belong to the chat, not to its thread.
ALTER TABLE chats ADD COLUMN model TEXT;
ALTER TABLE chats ADD COLUMN effort TEXT;
ALTER TABLE chats ADD COLUMN folder TEXT;
