-- Bindings of a signed request's signature to what it was first used for
-- (scheme M: method and path), so that the signature cannot be replayed on
-- another route within its window. Like nonces they are not derived from
-- events: Reset leaves them.
--
-- claim is a random number chosen by the caller that stored the row, so a
-- caller can tell its own write from another's value (see Bind).
CREATE TABLE nonce_bindings (
    scope      text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      text COLLATE "C" NOT NULL,
    claim      bigint           NOT NULL,
    expires_at timestamptz      NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX nonce_bindings_expires_idx ON nonce_bindings (expires_at);
