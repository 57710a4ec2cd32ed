-- Leases: one row per named lease (a read-model family, the relay, the
-- dispatcher). A row is never deleted, so its token only ever grows: every
-- acquisition adds one, and a write fenced on an older token is refused.
-- Times are the database's clock, the one clock every node shares.
CREATE TABLE leases (
    name        text        PRIMARY KEY,
    holder      text        NOT NULL DEFAULT '',
    token       bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);
