-- Several webhook endpoints per app (issue 14, item 4): each delivery goes
-- to one endpoint of its app (0: the default, app-level one, which every
-- delivery recorded before had), and each attempt keeps the start of the
-- receiver's answer (at most 256 bytes; '' once the delivery's user is
-- erased). Rows written before stay 0 and '', which is what they were.
ALTER TABLE webhook_deliveries ADD COLUMN endpoint_id bigint NOT NULL DEFAULT 0;
ALTER TABLE webhook_attempts ADD COLUMN response_excerpt text NOT NULL DEFAULT '';
