-- Outcome of the gateway's latest compaction of the chat's thread, for hygiene's back-off.
ALTER TABLE chats ADD COLUMN last_compaction TEXT
    CHECK (last_compaction IN ('reduced', 'noop', 'failed'));
-- The chat's turn count when that compaction ran.
ALTER TABLE chats ADD COLUMN last_compaction_turn INTEGER;
