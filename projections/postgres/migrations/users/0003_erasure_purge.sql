-- The erasure purge's bookkeeping (projections/postgres/purge.go). A row
-- deleted or blanked by an erasure stays in the table's files as a dead
-- tuple, in clear, until the file is rewritten: plain VACUUM marks the
-- space free but does not overwrite it. The users family records here the
-- log position of the last erasure it applied; the purge rewrites the
-- tables holding personal fields (VACUUM FULL) once every family that
-- applies erasures has passed that position, and records what it purged.
CREATE TABLE erasure_purge (
    id              int         PRIMARY KEY CHECK (id = 1),
    erased_commit   bigint      NOT NULL DEFAULT 0,
    erased_prepare  bigint      NOT NULL DEFAULT 0,
    erased_at       timestamptz,
    purged_commit   bigint      NOT NULL DEFAULT 0,
    purged_prepare  bigint      NOT NULL DEFAULT 0,
    purged_at       timestamptz
);
INSERT INTO erasure_purge (id) VALUES (1);
