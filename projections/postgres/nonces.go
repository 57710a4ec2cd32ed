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

// bindQuery stores the binding, or takes over an expired one, and returns
// the row as it stands after the statement. It always takes the row (an
// update that rewrites the same values when the binding holds), because a plain ON CONFLICT DO
// NOTHING followed by a SELECT could miss a row committed after the
// statement's snapshot; the conflict lock serialises concurrent binders,
// and the caller's random claim tells whether the row is its own write.
const bindQuery = `
INSERT INTO nonce_bindings AS b (scope, key, value, claim, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, key) DO UPDATE SET
    value      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.value ELSE b.value END,
    claim      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.claim ELSE b.claim END,
    expires_at = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.expires_at ELSE b.expires_at END
RETURNING value, claim = $4, expires_at`

// pruneBindingsQuery is pruneNoncesQuery for bindings.
const pruneBindingsQuery = `
DELETE FROM nonce_bindings WHERE (scope, key) IN (
    SELECT scope, key FROM nonce_bindings
    WHERE expires_at <= $1
    ORDER BY expires_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED)`

// Bind judges expiry with this process's clock, as Use does, and prunes
// expired bindings as Use prunes nonces.
//
// A binding this store has already seen hold is answered from boundCache
// (not fresh: this call wrote nothing). The others go through the store's
// binder, which sends the binds of concurrent calls in one statement.
func (s *Store) Bind(ctx context.Context, scope, key, value string, expires time.Time) (string, bool, error) {
	now := time.Now()
	if v, ok := s.bound.get(scope, key, now); ok {
		return v, false, nil
	}
	if rand.IntN(pruneEvery) == 0 {
		if _, err := s.pool.Exec(ctx, pruneBindingsQuery, now, pruneBatch); err != nil {
			return "", false, fmt.Errorf("projections/postgres: prune expired bindings: %w", err)
		}
	}
	r := &bindReq{scope: scope, key: key, value: value, claim: rand.Int64(), expires: expires}
	if err := s.binds.bind(ctx, s.pool, r); err != nil {
		return "", false, err
	}
	s.bound.put(scope, key, r.existing, r.until, time.Now())
	return r.existing, r.fresh, nil
}
