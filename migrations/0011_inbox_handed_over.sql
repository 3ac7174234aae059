-- The turn a message started, left running on its remote worker when the gateway
-- stopped: the next start follows it to its end and delivers its answer.
ALTER TABLE inbox ADD COLUMN handed_over_turn TEXT;
