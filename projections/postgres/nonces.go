package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pruning of expired nonces: one Use in pruneEvery first deletes up to
// pruneBatch expired rows, ten times what those calls can insert, so the
// table stays near the nonces still valid.
const (
	pruneEvery = 100
	pruneBatch = 1000
)

// useNonceQuery returns a row iff it inserted the nonce or took over an
// expired one; the conflict lock makes concurrent uses of one nonce see each
// other, so exactly one of them gets the row.
const useNonceQuery = `
INSERT INTO nonces (scope, nonce, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (scope, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
    WHERE nonces.expires_at <= $4
RETURNING true`

// pruneNoncesQuery skips rows another session holds, so pruning never waits
// for a Use (or another prune) and never deadlocks with one.
const pruneNoncesQuery = `
DELETE FROM nonces WHERE (scope, nonce) IN (
    SELECT scope, nonce FROM nonces
    WHERE expires_at <= $1
    ORDER BY expires_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED)`

// Use compares expiries with this process's clock, the one that computed
// them, rather than the database's, so both stores judge expiry alike.
func (s *Store) Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error) {
	now := time.Now()
	// Before the insert, so a failed prune consumes no nonce and the
	// request can be retried as it was.
	if rand.IntN(pruneEvery) == 0 {
		if _, err := s.pruneNonces(ctx, now, pruneBatch); err != nil {
			return false, err
		}
	}
	var fresh bool
	err := s.pool.QueryRow(ctx, useNonceQuery, scope, nonce, expires, now).Scan(&fresh)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("projections/postgres: use nonce in scope %q: %w", scope, err)
	}
	return fresh, nil
}

// pruneNonces deletes up to limit nonces expired at now and reports how many.
func (s *Store) pruneNonces(ctx context.Context, now time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, pruneNoncesQuery, now, limit)
	if err != nil {
		return 0, fmt.Errorf("projections/postgres: prune expired nonces: %w", err)
	}
	return tag.RowsAffected(), nil
}
