-- Facts every node sharing this database must agree on, checked at start
-- (internal/node): operator_token is the SHA-256 of the operator token the
-- first node recorded, so that a node that made up a token of its own is
-- refused instead of answering 401 to the operators' calls the others accept.
CREATE TABLE cluster_settings (
    name        text COLLATE "C" PRIMARY KEY,
    value       text             NOT NULL,
    recorded_at timestamptz      NOT NULL DEFAULT now()
);
