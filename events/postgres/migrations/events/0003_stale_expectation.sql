-- es_stale_expectation fails the caller's transaction with SQLSTATE S0001:
-- the one-round-trip append's guard (appendGuardQuery in postgres.go) calls
-- it when a stream's committed count is not the one the append expects.
-- Failing on the server, not in the client reading a result, lets the
-- append queue its INSERT and COMMIT in the same pipeline as the guard: a
-- stale expectation aborts the transaction before either runs, and the
-- adapter decides the group again the slow way. Expand only: earlier
-- releases never call it.
CREATE FUNCTION es_stale_expectation() RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'S0001',
        MESSAGE = 'a stream''s committed count is not the one the append expects';
END
$$;
