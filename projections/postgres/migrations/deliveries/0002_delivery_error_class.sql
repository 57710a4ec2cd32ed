-- The stable class of a webhook attempt's failure (timeout, tls_error, ...),
-- which partners see instead of the transport's raw error text. Rows written
-- before it stay NULL until a rebuild, which derives the class from the
-- recorded error (the delivery log views derive it when it is NULL).
ALTER TABLE webhook_deliveries ADD COLUMN last_error_class text;
ALTER TABLE webhook_attempts ADD COLUMN error_class text;
