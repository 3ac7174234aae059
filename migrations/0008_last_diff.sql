-- The unified diff of the chat's latest turn that changed files (`/diff`), so it is
-- still there after a restart; NULL until one did.
ALTER TABLE chats ADD COLUMN last_diff TEXT;
