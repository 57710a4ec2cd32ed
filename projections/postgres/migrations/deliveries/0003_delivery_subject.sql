-- The data subject a delivery's body is about ("user-<open_user_id>"), so
-- that user.erased blanks the bodies of that user's deliveries and stops
-- their retries (issue 9, item 2). Rows written before it stay '' until a
-- rebuild of the deliveries family, which fills it from the log.
ALTER TABLE webhook_deliveries ADD COLUMN subject text NOT NULL DEFAULT '';
CREATE INDEX webhook_deliveries_subject_idx
    ON webhook_deliveries (subject) WHERE subject <> '';
