-- A message held back by the account's usage limit runs no earlier than this (unix
-- seconds), after a restart too; NULL: as soon as its chat takes it.
ALTER TABLE inbox ADD COLUMN not_before INTEGER;
