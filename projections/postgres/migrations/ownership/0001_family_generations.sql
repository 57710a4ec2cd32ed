-- Generations of the read-model families, for rebuilds in a cluster: an
-- operator's rebuild request, made through any node, records the
-- generation it wants (requested); the family's owner, on whichever node
-- holds its lease, performs it (truncate and replay, fenced on its lease)
-- and moves generation up to it in the same transaction as the truncate.
-- Other nodes learn of both through LISTEN/NOTIFY, or this table when a
-- notification was lost, and make reads of the family wait meanwhile.
CREATE TABLE family_generations (
    projection   text        PRIMARY KEY,
    generation   bigint      NOT NULL DEFAULT 0,
    requested    bigint      NOT NULL DEFAULT 0,
    requested_at timestamptz,
    rebuilt_at   timestamptz
);
