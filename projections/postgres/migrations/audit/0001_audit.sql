-- Audit facts: who read which personal or health data, when and why.
--
-- seq numbers the facts in log order (1, 2, 3...) and is the listing's
-- cursor; the projector assigns max(seq) + 1 inside the family's
-- transaction, so a rebuild numbers them the same. event_id makes a
-- replayed fact a no-op.
CREATE TABLE audit_facts (
    seq       bigint      PRIMARY KEY,
    event_id  text        NOT NULL UNIQUE,
    actor     text        NOT NULL,
    action    text        NOT NULL,
    subjects  text[]      NOT NULL,
    event_ids text[]      NOT NULL,
    report_id bigint      NOT NULL,
    app_id    bigint      NOT NULL,
    reason    text        NOT NULL,
    at        timestamptz NOT NULL
);
-- Listing by actor in seq order.
CREATE INDEX audit_facts_actor_idx ON audit_facts (actor, seq);
-- Listing by subject: subjects @> ARRAY[stream].
CREATE INDEX audit_facts_subjects_idx ON audit_facts USING gin (subjects);
