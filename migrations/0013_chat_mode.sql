-- A chat's /mode: read-only, auto or full; NULL runs with the config's sandbox and
-- approval policy.
ALTER TABLE chats ADD COLUMN mode TEXT;
