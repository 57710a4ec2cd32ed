-- Nonces of signed requests, remembered until they expire so that a request
-- cannot be replayed. They are not derived from events: Reset leaves them.
--
-- COLLATE "C": only equality matters, and byte comparison is the cheapest.
CREATE TABLE nonces (
    scope      text COLLATE "C" NOT NULL,
    nonce      text COLLATE "C" NOT NULL,
    expires_at timestamptz      NOT NULL,
    PRIMARY KEY (scope, nonce)
);
-- The pruning of expired rows walks only those.
CREATE INDEX nonces_expires_idx ON nonces (expires_at);
