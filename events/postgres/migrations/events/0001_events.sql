-- The log. position is the global order, stored (never derived from ctid or
-- a transaction id) so it survives VACUUM FULL and dump/restore; it is
-- assigned as max(position)+1 under the append lock, so it is gapless and in
-- commit order. (stream, revision) and id are unique: the constraints back
-- the expected-revision and idempotency checks the adapter makes.
CREATE TABLE es_events (
    position bigint      PRIMARY KEY CHECK (position > 0),
    stream   text        NOT NULL,
    revision bigint      NOT NULL CHECK (revision >= 0),
    id       text        NOT NULL UNIQUE,
    type     text        NOT NULL,
    data     bytea       NOT NULL,
    meta     bytea,
    created  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (stream, revision)
);
