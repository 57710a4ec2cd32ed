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
// admit, within TTL, tokens it took earlier, so in any window a key
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
	// TTL is how long a lease's tokens may be handed out. The bound
	// above holds for any TTL; a short one only makes a key called less
	// often than once per TTL renew on every call (a round trip each).
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
	shared  float64   // the shared bucket's level when the lease was taken
	at      time.Time // when it was taken
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
	d, rn := l.Reserve(key)
	if rn == nil {
		return d, nil
	}
	return rn.TakeNow(ctx)
}

// Reserve admits a request from key's lease when the lease can, and then
// returns a nil Renewal. Otherwise it returns the renewal the request must
// make: its caller either carries rn.Want and rn.Back in a statement of
// its own on the shared bucket (TakeWhen) and calls Settle with what that
// statement granted, or calls TakeNow, or Cancel when nothing was taken.
// Until one of these, the key's other requests on this node wait for the
// renewal, as they wait for Allow's.
func (l *Leased) Reserve(key string) (Decision, *Renewal) {
	l.mu.Lock()
	ls, ok := l.leases[key]
	if !ok {
		ls = &lease{}
		l.leases[key] = ls
	}
	l.mu.Unlock()

	ls.mu.Lock()
	now := l.Now()
	if ls.left > 0 && now.Before(ls.expires) {
		ls.left--
		// The headers' level, as a renewal would report it: the shared
		// bucket as it was, refilled since (a lease may be good for many
		// seconds), with this lease's tokens, at most the limit, less
		// this call's token. Other nodes' takes since are unknown here.
		refilled := ls.shared + max(now.Sub(ls.at).Seconds(), 0)*Rate(l.Limit, l.Period)
		level := min(refilled+float64(ls.left)+1, float64(l.Limit)) - 1
		d := Decide(Grant{Granted: 1, Tokens: level}, 1, l.Limit, l.Period)
		ls.mu.Unlock()
		return d, nil
	}
	// Expired: its tokens were never admitted, give them back.
	return Decision{}, &Renewal{Key: key, Want: l.Batch, Back: ls.left, l: l, ls: ls, now: now}
}

// Refund gives back to key's lease the token Reserve admitted from it for
// a request that then spent nothing (a report pull whose nonce turned out
// to be replayed). The token was taken from the shared bucket and never
// admitted, so the node keeps it: the key's lease hands it out again while
// it lasts, or gives it back to the shared bucket with its next renewal.
// If the lease was renewed meanwhile the token joins the new one, so a
// node holds at most Batch tokens plus the refunds in flight.
func (l *Leased) Refund(key string) {
	l.mu.Lock()
	ls, ok := l.leases[key]
	l.mu.Unlock()
	if !ok {
		return
	}
	ls.mu.Lock()
	ls.left++
	ls.mu.Unlock()
}

// Spec describes the shared bucket when it can be taken from within a
// caller's statement (ratelimit/postgres); ok is false otherwise.
func (l *Leased) Spec() (spec BucketSpec, ok bool) {
	s, ok := l.Shared.(interface{ Spec() BucketSpec })
	if !ok {
		return BucketSpec{}, false
	}
	return s.Spec(), true
}

// Renewal is one request's pending renewal of a lease (Leased.Reserve):
// take Want tokens from the shared bucket of Key, giving Back tokens back.
// It holds the key's lease on this node until Settle, TakeNow or Cancel.
type Renewal struct {
	Key        string
	Want, Back int

	l    *Leased
	ls   *lease
	now  time.Time
	done bool
}

// Settle installs what the shared bucket granted for this renewal as the
// node's lease and returns the request's decision.
func (r *Renewal) Settle(g Grant) Decision {
	if r == nil || r.done {
		return Decision{}
	}
	r.done = true
	ls, l := r.ls, r.l
	defer ls.mu.Unlock()
	ls.left, ls.shared, ls.at, ls.expires = 0, g.Tokens, r.now, r.now.Add(l.TTL)
	if g.Granted == 0 {
		return Decide(g, 1, l.Limit, l.Period)
	}
	ls.left = g.Granted - 1
	return Decide(Grant{Granted: 1, Tokens: ls.shared + float64(ls.left)}, 1, l.Limit, l.Period)
}

// TakeNow makes the renewal in a round trip of its own and settles it.
func (r *Renewal) TakeNow(ctx context.Context) (Decision, error) {
	g, err := r.l.Shared.Take(ctx, r.Key, r.Want, r.Back)
	if err != nil {
		r.Cancel()
		return Decision{}, err
	}
	return r.Settle(g), nil
}

// Cancel releases the lease unchanged: the renewal took nothing (the
// statement that carried it failed, or never ran). A no-op once settled.
func (r *Renewal) Cancel() {
	if r == nil || r.done {
		return
	}
	r.done = true
	r.ls.mu.Unlock()
}

// Pending reports whether the renewal still waits for Settle, TakeNow or
// Cancel.
func (r *Renewal) Pending() bool { return r != nil && !r.done }
