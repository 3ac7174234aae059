-- How far the kept answer got to the platform: the pieces it took, and whether a piece was
-- on its way when the gateway went away (it may have arrived: not sent again by itself).
ALTER TABLE inbox ADD COLUMN answer_pieces_taken INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN answer_sending INTEGER NOT NULL DEFAULT 0
    CHECK (answer_sending IN (0, 1));
