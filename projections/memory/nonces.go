package memory

import (
	"context"
	"sync"
	"time"
)

// minPrune is how many new nonces a set takes before its first prune, so a
// small set is not swept on every insert.
const minPrune = 1024

type nonceKey struct {
	scope, nonce string
}

// nonceSet remembers nonces until they expire. It has its own lock, so the
// request path never waits for a projection's Update, and it prunes expired
// entries as it grows: after as many new nonces as it kept at the last prune
// (at least minPrune), which bounds it to about twice the nonces still valid
// plus minPrune at an amortised O(1) per insert.
type nonceSet struct {
	mu      sync.Mutex
	expires map[nonceKey]time.Time
	added   int // new keys since the last prune
	pruneAt int // value of added that triggers the next prune
}

func newNonceSet() nonceSet {
	return nonceSet{expires: map[nonceKey]time.Time{}, pruneAt: minPrune}
}

// use records k until expires and reports whether no earlier use of k is
// still valid at now (an earlier use is valid while its expiry is after now).
func (n *nonceSet) use(k nonceKey, expires, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev, seen := n.expires[k]
	if seen && prev.After(now) {
		return false
	}
	n.expires[k] = expires
	if !seen {
		n.added++
		if n.added >= n.pruneAt {
			n.prune(now)
		}
	}
	return true
}

func (n *nonceSet) prune(now time.Time) {
	for k, exp := range n.expires {
		if !exp.After(now) {
			delete(n.expires, k)
		}
	}
	n.added = 0
	n.pruneAt = max(minPrune, len(n.expires))
}

// Use compares expiries with this process's clock, the one that computed
// them, at the microsecond precision the Postgres store keeps.
func (s *Store) Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return s.nonces.use(nonceKey{scope, nonce}, normTime(expires), normTime(time.Now())), nil
}
