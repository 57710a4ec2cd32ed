-- Relay checkpoints: the position of the last event the bus acknowledged,
-- one row per relay output. Only the holder of the relay lease writes it
-- (each write is fenced on the lease in the same transaction), and a write
-- never moves it backwards. Positions are events.Position, stored as in the
-- read models' checkpoints table (uint64 bits in bigint); they are compared
-- in SQL, which is exact for every value below 2^63.
CREATE TABLE relay_checkpoints (
    name        text        PRIMARY KEY,
    commit_pos  bigint      NOT NULL,
    prepare_pos bigint      NOT NULL,
    token       bigint      NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
