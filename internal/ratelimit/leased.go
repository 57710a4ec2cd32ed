package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Taker is a bucket store that grants several tokens in one decision and
// takes back unused ones: ratelimit/postgres implements it on a row per key
// that every node shares.
type Taker interface {
	// Take first returns back tokens to key's bucket (never beyond its
	// capacity), then takes as many whole tokens as it holds, up to want.
	Take(ctx context.Context, key string, want, back int) (Grant, error)
}

// Leased answers from small leases of tokens taken from a shared bucket, so
// a node makes one round trip per Batch requests instead of one per request.
//
// The shared bucket is never overdrawn: a token is taken from it before any
// node admits a request with it. What a lease adds is time: a node may
// admit, within TTL, tokens it took a moment earlier, so in any window a key
// gets at most what the shared bucket allows plus the tokens leased out at
// the window's start (nodes × Batch). A lease that expires unused gives its
// tokens back with the node's next take for that key, so idle leases cost
// other nodes nothing once traffic returns. With Batch 1 a lease is exactly
// one request's token: every decision is one round trip and exact.
type Leased struct {
	Shared Taker
	Limit  int
	Period time.Duration
	// Batch is how many tokens a lease asks for (at least 1).
	Batch int
	// TTL is how long a lease's tokens may be handed out.
	TTL time.Duration
	Now func() time.Time

	mu     sync.Mutex
	leases map[string]*lease
}

// lease is one key's tokens on this node; its mutex is held across the
// round trip that renews it, so concurrent requests for one key wait for
// that one renewal instead of each taking a lease.
type lease struct {
	mu      sync.Mutex
	left    int
	shared  float64 // the shared bucket's level when the lease was taken
	expires time.Time
}

// NewLeased builds a leasing limiter of limit requests per period over a
// shared bucket; batch tokens per lease, each lease good for ttl.
func NewLeased(shared Taker, limit int, period time.Duration, batch int, ttl time.Duration) *Leased {
	return &Leased{Shared: shared, Limit: limit, Period: period, Batch: max(batch, 1), TTL: ttl, Now: time.Now, leases: map[string]*lease{}}
}

// Allow admits a request from this node's lease of key's tokens, renewing
// the lease from the shared bucket when it is spent or expired.
func (l *Leased) Allow(ctx context.Context, key string) (Decision, error) {
	l.mu.Lock()
	ls, ok := l.leases[key]
	if !ok {
		ls = &lease{}
		l.leases[key] = ls
	}
	l.mu.Unlock()

	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := l.Now()
	if ls.left > 0 && now.Before(ls.expires) {
		ls.left--
		return Decide(Grant{Granted: 1, Tokens: ls.shared + float64(ls.left)}, 1, l.Limit, l.Period), nil
	}
	back := ls.left // expired: its tokens were never admitted, give them back
	g, err := l.Shared.Take(ctx, key, l.Batch, back)
	if err != nil {
		return Decision{}, err
	}
	ls.left, ls.shared, ls.expires = 0, g.Tokens, now.Add(l.TTL)
	if g.Granted == 0 {
		return Decide(g, 1, l.Limit, l.Period), nil
	}
	ls.left = g.Granted - 1
	return Decide(Grant{Granted: 1, Tokens: ls.shared + float64(ls.left)}, 1, l.Limit, l.Period), nil
}
