-- How this chat sees a running turn (/verbose, /quiet): 'status', 'verbose' or 'quiet';
-- NULL keeps the gateway's default ([chat] progress).
ALTER TABLE chats ADD COLUMN progress TEXT;
