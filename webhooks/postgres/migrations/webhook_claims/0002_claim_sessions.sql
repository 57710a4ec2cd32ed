-- session is the advisory-lock key the claiming node's lease session holds
-- while the node lives: a claim whose session is gone (its node died and
-- its connection closed) may be taken at once instead of at "until". NULL
-- for claims of nodes that do not know the column: they lapse at "until".
ALTER TABLE webhook_delivery_claims ADD COLUMN session integer;
