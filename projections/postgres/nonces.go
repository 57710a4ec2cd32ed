package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/internal/nonces"
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

// bindRouteAndClaimQuery is bindQuery for a scheme M signature's route
// binding ($1–$5) followed, in the same statement, by bindQuery for the
// signed write's claim ($6–$10), which is stored only when the route
// binding accepts the request's route ($12) outright: the binding is this
// statement's own row, or it holds that route (recorded with its first
// use's time, or by an older release without one). On another route the
// claim is left out, so a request the binding refuses leaves no claim
// behind; the caller then judges the route (the grace) and claims on its
// own. The route's row is written first, as the grouped statement (sorted
// by scope: "m" before "signed-write") writes them, so the two statements
// take their conflict locks in one order.
const bindRouteAndClaimQuery = `
WITH r AS (
    INSERT INTO nonce_bindings AS b (scope, key, value, claim, expires_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (scope, key) DO UPDATE SET
        value      = CASE WHEN b.expires_at <= $11 THEN EXCLUDED.value ELSE b.value END,
        claim      = CASE WHEN b.expires_at <= $11 THEN EXCLUDED.claim ELSE b.claim END,
        expires_at = CASE WHEN b.expires_at <= $11 THEN EXCLUDED.expires_at ELSE b.expires_at END
    RETURNING value, claim = $4 AS mine, expires_at),
w AS (
    INSERT INTO nonce_bindings AS b (scope, key, value, claim, expires_at)
    SELECT $6, $7, $8, $9, $10 FROM r
    WHERE r.mine OR r.value = $12
       OR (split_part(r.value, ' ', 1) ~ '^[0-9]{1,19}$' AND substr(r.value, length(split_part(r.value, ' ', 1)) + 2) = $12)
    ON CONFLICT (scope, key) DO UPDATE SET
        value      = CASE WHEN b.expires_at <= $11 THEN EXCLUDED.value ELSE b.value END,
        claim      = CASE WHEN b.expires_at <= $11 THEN EXCLUDED.claim ELSE b.claim END,
        expires_at = CASE WHEN b.expires_at <= $11 THEN EXCLUDED.expires_at ELSE b.expires_at END
    RETURNING value, claim = $9 AS mine, expires_at)
SELECT r.value, r.expires_at, w.value IS NOT NULL, coalesce(w.mine, false), coalesce(w.expires_at, r.expires_at)` + bindRouteAndClaimFrom

const bindRouteAndClaimFrom = `
FROM r LEFT JOIN w ON true`

// bindRouteAndClaimAtHeadQuery is bindRouteAndClaimQuery with the log's
// head, read by head's statement, as a sixth column.
func bindRouteAndClaimAtHeadQuery(head *headQuery) string {
	return strings.TrimSuffix(bindRouteAndClaimQuery, bindRouteAndClaimFrom) + `, (` + head.sql + `)` + bindRouteAndClaimFrom
}

// BindRouteAndClaim implements nonces.RouteClaimer: a scheme M
// write's route binding and its claim in one statement (one transaction)
// where they were two. The route's binding is answered as Bind answers it;
// claimed says whether the claim was bound too (the binding accepted the
// route outright), and then fresh says whether the claim is this call's
// own (the write runs) or another's (a replay). A route binding this store
// has already seen hold is judged by the caller first: claimed is false.
func (s *Store) BindRouteAndClaim(ctx context.Context, route, claim nonces.Binding, routeName string) (bound string, claimed, fresh bool, err error) {
	c, err := s.bindRouteAndClaim(ctx, route, claim, routeName, false)
	return c.Bound, c.Claimed, c.Fresh, err
}

// BindRouteAndClaimAtHead implements idempotency.HeadRouteClaimer: it is
// BindRouteAndClaim whose statement also returns the log's head under
// SeeHead (the event store shares this database), read by the statement
// itself, so after everything committed before it was sent. A request
// authenticated on an app entry not yet known current is confirmed at
// that head, and a signed write costs no head read of its own.
func (s *Store) BindRouteAndClaimAtHead(ctx context.Context, route, claim nonces.Binding, routeName string) (nonces.RouteClaim, error) {
	return s.bindRouteAndClaim(ctx, route, claim, routeName, s.head != nil)
}

func (s *Store) bindRouteAndClaim(ctx context.Context, route, claim nonces.Binding, routeName string, withHead bool) (c nonces.RouteClaim, err error) {
	now := time.Now()
	if v, ok := s.bound.get(route.Scope, route.Key, now); ok {
		return nonces.RouteClaim{Bound: v}, nil
	}
	if rand.IntN(pruneEvery) == 0 {
		if _, err := s.pool.Exec(ctx, pruneBindingsQuery, now, pruneBatch); err != nil {
			return c, fmt.Errorf("projections/postgres: prune expired bindings: %w", err)
		}
	}
	routeClaim, runClaim := rand.Int64(), rand.Int64()
	var routeUntil, claimUntil time.Time
	args := []any{route.Scope, route.Key, route.Value, routeClaim, route.Expires,
		claim.Scope, claim.Key, claim.Value, runClaim, claim.Expires,
		now, routeName}
	if withHead {
		var head int64
		err = s.pool.QueryRow(ctx, s.routeClaimAtHead, args...).
			Scan(&c.Bound, &routeUntil, &c.Claimed, &c.Fresh, &claimUntil, &head)
		c.Head, c.HeadKnown = s.head.position(head), err == nil
	} else {
		err = s.pool.QueryRow(ctx, bindRouteAndClaimQuery, args...).Scan(&c.Bound, &routeUntil, &c.Claimed, &c.Fresh, &claimUntil)
	}
	if err != nil {
		return nonces.RouteClaim{}, fmt.Errorf("projections/postgres: bind a route and claim a signed write: %w", err)
	}
	at := time.Now()
	s.bound.put(route.Scope, route.Key, c.Bound, routeUntil, at)
	if c.Claimed && !c.Fresh {
		// The claim's value is another writer's, unknown here: only the
		// route is remembered.
		return c, nil
	}
	if c.Claimed {
		s.bound.put(claim.Scope, claim.Key, claim.Value, claimUntil, at)
	}
	return c, nil
}
