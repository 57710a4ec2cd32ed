-- checkpoint_backwards fails the caller's transaction with SQLSTATE K0001:
-- a read model's checkpoint statement (advanceCheckpoint in postgres.go)
-- calls it in place of the new position when the position would move
-- back. Failing on the server, not in the client reading the affected
-- rows, lets an apply queue its COMMIT in the same pipeline as its
-- checkpoint: a refused move aborts the transaction before the COMMIT
-- runs. Only the failure is a function: the checkpoint itself stays one
-- plain statement.
CREATE FUNCTION checkpoint_backwards(projection_name text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'K0001',
        MESSAGE = format('the checkpoint of %s would move backwards', projection_name);
END
$$;
