-- Webhook deliveries (the delivery log and the partners' feed) and their attempts.
--
-- Positions here are numeric(20,0), not the bit-reinterpreted bigint of
-- checkpoints: these are ordered and compared in SQL (the feed's cursor,
-- LastSource), and numeric orders the whole uint64 range as Go does, where
-- reinterpreted bigint would put positions at or above 2^63 first.
--
-- delivery_id is COLLATE "C" so that the tie-break on it orders bytes as Go
-- does, whatever the database's default collation.
CREATE TABLE webhook_deliveries (
    delivery_id     text COLLATE "C" PRIMARY KEY,
    app_id          bigint         NOT NULL,
    event_type      text           NOT NULL,
    source_event_id text           NOT NULL,
    source_commit   numeric(20, 0) NOT NULL,
    source_prepare  numeric(20, 0) NOT NULL,
    cursor_commit   numeric(20, 0) NOT NULL,
    cursor_prepare  numeric(20, 0) NOT NULL,
    body            bytea          NOT NULL,
    status          text           NOT NULL,
    attempts        integer        NOT NULL,
    next_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    created_at      timestamptz    NOT NULL,
    updated_at      timestamptz    NOT NULL
);
-- Deliveries(AppID, After): the partner's feed and delivery log, in cursor order.
CREATE INDEX webhook_deliveries_app_cursor_idx
    ON webhook_deliveries (app_id, cursor_commit, cursor_prepare, delivery_id);
-- Deliveries without AppID: the operator's log across apps.
CREATE INDEX webhook_deliveries_cursor_idx
    ON webhook_deliveries (cursor_commit, cursor_prepare, delivery_id);
-- Due and NextDue: only the queue, which stays small while the log grows.
CREATE INDEX webhook_deliveries_due_idx
    ON webhook_deliveries (next_attempt_at, cursor_commit, cursor_prepare, delivery_id)
    WHERE status IN ('pending', 'retrying');
-- LastSource.
CREATE INDEX webhook_deliveries_source_idx
    ON webhook_deliveries (source_commit, source_prepare);

-- No foreign key to webhook_deliveries: the projector writes both in one
-- transaction, and Reset truncates both together.
CREATE TABLE webhook_attempts (
    delivery_id text COLLATE "C" NOT NULL,
    attempt     integer          NOT NULL,
    at          timestamptz      NOT NULL,
    status_code integer,
    latency_ms  bigint           NOT NULL,
    error       text,
    outcome     text             NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
