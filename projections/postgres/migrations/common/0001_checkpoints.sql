-- Checkpoints: one row per projection (each read-model family, named after it).
--
-- Positions are events.Position (two uint64). They are stored in bigint with
-- the bits of the uint64 reinterpreted as int64: every uint64 round-trips
-- exactly, values below 2^63 (all of them in practice) read as themselves in
-- psql, and no query orders or compares positions in SQL.
CREATE TABLE checkpoints (
    projection  text        PRIMARY KEY,
    commit_pos  bigint      NOT NULL,
    prepare_pos bigint      NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
