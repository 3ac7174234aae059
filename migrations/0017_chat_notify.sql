-- Which of the bot's messages notify in this chat (`/notify`: all, important, off);
-- NULL: the default, important.
ALTER TABLE chats ADD COLUMN notify TEXT;
