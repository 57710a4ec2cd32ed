-- Where the next event of some types is, without reading the events between
-- (SubscribeAllFor: a follower of a few types skips the rest of the log),
-- and which types the log holds (a loose scan, one probe per type). Expand
-- only: earlier releases neither read nor mind it. Building it on a large
-- log holds appends for the build's duration (seconds per million events).
CREATE INDEX IF NOT EXISTS es_events_type_position ON es_events (type, position);
