-- Webhook delivery claims: at most one attempt of a delivery in flight
-- across the nodes. A node inserts (or takes over a lapsed) row before it
-- posts a delivery and deletes it once the outcome is recorded; a row whose
-- node died lapses at "until" and is taken over by the next claimer, which
-- deletes it in turn. Rows are few: at most the deliveries in flight.
CREATE TABLE webhook_delivery_claims (
    delivery_id text        PRIMARY KEY,
    owner       text        NOT NULL,
    token       text        NOT NULL,
    until       timestamptz NOT NULL
);
