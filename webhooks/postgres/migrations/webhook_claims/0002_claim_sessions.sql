-- session is the advisory-lock key the claiming node's claims session holds
-- while the node lives, and claimed_at when the claim was taken: a claim
-- whose session is gone (its node died and its connection closed) may be
-- taken once it is webhooks.DeadClaimGrace old, instead of at "until".
-- NULL for claims of nodes that do not know the columns: they lapse at
-- "until".
ALTER TABLE webhook_delivery_claims ADD COLUMN session integer, ADD COLUMN claimed_at timestamptz;
