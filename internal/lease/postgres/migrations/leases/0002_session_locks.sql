-- locked says the holder also holds the lease's session-level advisory
-- lock: while it does, its lease is live only as long as its database
-- session, so another node may take it the moment that session ends (its
-- process died and the connection closed) instead of after the TTL. Nodes
-- that do not know the column leave it false and fall back on the TTL.
ALTER TABLE leases ADD COLUMN locked boolean NOT NULL DEFAULT false;
