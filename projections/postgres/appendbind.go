package postgres

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// RideAppends tells the store that the event store lives in the same
// database and that ride returns a context whose appends also write a
// statement (one bool row) in their own transaction, reporting its value
// once committed (events/postgres WithRider). BindWithAppend then binds
// in the append's transaction. Call it before serving.
func (s *Store) RideAppends(ride func(ctx context.Context, sql string, args []any, done func(bool)) context.Context) {
	s.rideAppend = ride
}

// bindWithAppendQuery is bindQuery reduced to whether the row holds this
// statement's claim: the binding is written, or an expired one taken over,
// by this statement (or by an earlier commit of the same rider).
const bindWithAppendQuery = `
WITH b AS (
    INSERT INTO nonce_bindings AS b (scope, key, value, claim, expires_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (scope, key) DO UPDATE SET
        value      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.value ELSE b.value END,
        claim      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.claim ELSE b.claim END,
        expires_at = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.expires_at ELSE b.expires_at END
    RETURNING claim = $4 AS mine)
SELECT mine FROM b`

// BindWithAppend implements idempotency.AppendBinder: the binding is
// written by the transaction of the first append made with the returned
// context that commits events, so it exists exactly when that append
// committed; bound reports, once the append returned, whether it was
// written with this binding's value (false: no append committed with it,
// or the key already held another value, as Bind's fresh reports). Without
// RideAppends the context is ctx and bound always false: the caller binds
// on its own.
func (s *Store) BindWithAppend(ctx context.Context, b nonces.Binding) (context.Context, func() bool) {
	if s.rideAppend == nil {
		return ctx, func() bool { return false }
	}
	var mine atomic.Bool
	// Expiry is judged by this process's clock at the commit's queueing,
	// as Bind judges it at its call.
	args := []any{b.Scope, b.Key, b.Value, rand.Int64(), b.Expires, time.Now()}
	return s.rideAppend(ctx, bindWithAppendQuery, args, func(v bool) { mine.Store(v) }), mine.Load
}
