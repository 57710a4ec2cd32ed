-- lease_lost fails the caller's transaction with SQLSTATE L0001: the fence
-- (fenceSQL in postgres.go) calls it when it finds no current lease row.
-- Failing on the server, not in the client reading an empty result, lets a
-- writer queue its COMMIT in the same pipeline as the fence: a lost lease
-- aborts the transaction before the COMMIT runs. Only the failure is a
-- function: the fence itself stays one plain statement.
CREATE FUNCTION lease_lost(lease_name text, lease_token bigint) RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'L0001',
        MESSAGE = format('lease %s token %s is no longer current', lease_name, lease_token);
END
$$;
