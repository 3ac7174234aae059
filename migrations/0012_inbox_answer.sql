-- The final answer of the message's turn, kept until the platform took it: an answer a
-- crash kept from its chat is sent at the next start, once.
ALTER TABLE inbox ADD COLUMN answer TEXT;
