-- What a message sent during a turn does in this chat (/steer, /queue): 'steer' or
-- 'queue'; NULL keeps the gateway's default ([chat] follow_up).
ALTER TABLE chats ADD COLUMN follow_up TEXT;
