// Package nonces is the replay guard's port: a store that remembers the
// nonces of signed requests (scheme H) and the bindings of signatures to
// routes (scheme M) for their validity window, so that a captured request
// cannot be replayed. Nonces are not read models: no rebuild of the log may
// reopen them.
//
// The adapters: bolt and filelog keep an embedded node's guard in a file of
// its data directory; a cluster keeps it in the Postgres read-model store
// (projections/postgres), shared by every node, and the in-memory read-model
// store (projections/memory) keeps it for tests and single runs. Both read
// models implement it because a snapshot read may record a Binding in the
// same round trip. Every adapter passes the conformance suite noncetest.
package nonces

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// ErrClosed is what an adapter without an error of its own answers to a
// use after Close.
var ErrClosed = errors.New("nonces: the store is closed")

// Store remembers nonces for their validity window so that a signed
// request cannot be replayed.
type Store interface {
	// Use records nonce in scope until expires and reports whether it was
	// fresh: false means it was already used and has not expired.
	Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error)
	// Bind ties key in scope to value until expires: the first caller stores
	// value and gets fresh=true; later callers get the stored value (fresh
	// false) to compare with theirs, until it expires and the next caller's
	// value replaces it. Concurrent callers see one value. Bindings live
	// apart from nonces (a key never collides with a nonce) and, like
	// them, survive Reset.
	Bind(ctx context.Context, scope, key, value string, expires time.Time) (existing string, fresh bool, err error)
}

// Binding is a Store.Bind call: value tied to key in scope until Expires.
type Binding struct {
	Scope, Key, Value string
	Expires           time.Time
}

// RouteClaim is what one statement that binds a scheme M signature's route
// and claims the signed write answers (idempotency.HeadRouteClaimer): the
// route binding's value, whether the claim was bound and is the caller's
// own, and the event log's head as the statement saw it (HeadKnown false
// when it read none: no statement was sent, or the log lives elsewhere).
type RouteClaim struct {
	Bound          string
	Claimed, Fresh bool
	Head           events.Position
	HeadKnown      bool
}

// HoldsRoute reports whether a scheme M signature's route binding, whose
// value is bound, holds route outright: the value its first use recorded,
// "<unix nanoseconds> <route>", or an older release's "<route>" alone. A
// store that binds the route and claims the signed write together
// (idempotency.RouteClaimer) claims only then; any other value is judged by
// the caller (the grace of another route).
func HoldsRoute(bound, route string) bool {
	if bound == route {
		return true
	}
	ns, rest, ok := strings.Cut(bound, " ")
	if !ok || rest != route || len(ns) == 0 || len(ns) > 19 {
		return false
	}
	for i := range len(ns) {
		if ns[i] < '0' || ns[i] > '9' {
			return false
		}
	}
	return true
}
