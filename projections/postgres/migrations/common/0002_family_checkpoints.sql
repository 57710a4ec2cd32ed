-- The read models used to share one checkpoint, read_models; each family now
-- has its own. A database written by that version starts every family where
-- the shared checkpoint was, so an upgrade does not replay the log.
INSERT INTO checkpoints (projection, commit_pos, prepare_pos, updated_at)
SELECT f.name, c.commit_pos, c.prepare_pos, now()
FROM checkpoints c
CROSS JOIN (VALUES ('users'), ('deliveries'), ('reports'), ('orders'), ('benefits')) AS f(name)
WHERE c.projection = 'read_models'
ON CONFLICT (projection) DO NOTHING;
DELETE FROM checkpoints WHERE projection = 'read_models';
