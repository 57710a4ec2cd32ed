package memory

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// minPrune is how many new nonces a set takes before its first prune, so a
// small set is not swept on every insert.
const minPrune = 1024

type nonceKey struct {
	scope, nonce string
}

// nonceEntry is what a set keeps per key: the bound value (empty for a
// plain nonce) and when it stops counting.
type nonceEntry struct {
	value   string
	expires time.Time
}

// nonceSet remembers nonces (or bindings) until they expire. It has its own
// lock, so the request path never waits for a projection's Update, and it
// prunes expired entries as it grows: after as many new keys as it kept at
// the last prune (at least minPrune), which bounds it to about twice the
// entries still valid plus minPrune at an amortised O(1) per insert.
type nonceSet struct {
	mu      sync.Mutex
	entries map[nonceKey]nonceEntry
	added   int // new keys since the last prune
	pruneAt int // value of added that triggers the next prune
}

func newNonceSet() nonceSet {
	return nonceSet{entries: map[nonceKey]nonceEntry{}, pruneAt: minPrune}
}

// use records k until expires and reports whether no earlier use of k is
// still valid at now (an earlier use is valid while its expiry is after now).
func (n *nonceSet) use(k nonceKey, expires, now time.Time) bool {
	_, fresh := n.bind(k, "", expires, now)
	return fresh
}

// bind stores value under k until expires unless an entry of k is still
// valid at now, and returns the value that holds and whether it is value's.
func (n *nonceSet) bind(k nonceKey, value string, expires, now time.Time) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev, seen := n.entries[k]
	if seen && prev.expires.After(now) {
		return prev.value, false
	}
	n.entries[k] = nonceEntry{value: value, expires: expires}
	if !seen {
		n.added++
		if n.added >= n.pruneAt {
			n.prune(now)
		}
	}
	return value, true
}

func (n *nonceSet) prune(now time.Time) {
	for k, e := range n.entries {
		if !e.expires.After(now) {
			delete(n.entries, k)
		}
	}
	n.added = 0
	n.pruneAt = max(minPrune, len(n.entries))
}

// Use compares expiries with this process's clock, the one that computed
// them, at the microsecond precision the Postgres store keeps.
func (s *Store) Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if s.closed.Load() {
		return false, nonces.ErrClosed
	}
	return s.nonces.use(nonceKey{scope, nonce}, normTime(expires), normTime(time.Now())), nil
}

// Bind keeps bindings in a set of their own, so a binding's key never
// collides with a nonce; it judges expiry as Use does. They live in this
// process only: an embedded node forgets them on restart.
func (s *Store) Bind(ctx context.Context, scope, key, value string, expires time.Time) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if s.closed.Load() {
		return "", false, nonces.ErrClosed
	}
	existing, fresh := s.bindings.bind(nonceKey{scope, key}, value, normTime(expires), normTime(time.Now()))
	return existing, fresh, nil
}
