// Package ratelimit keeps per-key token buckets, so one partner's burst
// cannot starve the others; it answers with what the rate-limit headers need.
//
// Limiter is the in-process bucket of an embedded node. A cluster shares its
// buckets in Postgres (ratelimit/postgres), so that N nodes admit the limit
// once, not N times; Leased puts a node-local cache of small token leases in
// front of such a shared bucket for high limits. Consumers (auth, queryapi)
// declare the one-method interface they call; every adapter passes the
// ratelimittest suite.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"
)

// Limiter allows Limit requests per Period per key, refilled continuously.
type Limiter struct {
	Limit  int
	Period time.Duration
	Now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	calls   int
}

type bucket struct {
	tokens float64
	at     time.Time
}

// Decision is one request's verdict and the numbers for the response headers.
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	RetryAfter time.Duration // until one request is allowed again (when refused)
	Reset      time.Duration // until the bucket is full again
}

// BucketSpec describes a shared bucket (ratelimit/postgres) to a caller
// that takes from it within a statement of its own: its name, its limit per
// period, and its clock (nil: the database's).
type BucketSpec struct {
	Name   string
	Limit  int
	Period time.Duration
	Now    func() time.Time
}

// Take is a take from a shared bucket (ratelimit/postgres) that a caller
// carries in a statement of its own: Want tokens from Key's row of Bucket
// after giving Back tokens back, as Taker's Take.
type Take struct {
	Bucket     BucketSpec
	Key        string
	Want, Back int
}

// Grant is the outcome of taking up to n tokens at once from a bucket: how
// many were granted and the bucket's level afterwards, from which a Decision's
// numbers follow. Leased takes its leases as Grants.
type Grant struct {
	Granted int
	Tokens  float64 // tokens left in the bucket after the grant
}

// New builds a limiter of limit requests per period.
func New(limit int, period time.Duration) *Limiter {
	return &Limiter{Limit: limit, Period: period, Now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes one token from key's bucket if it has one. It never fails; the
// error is there so that the in-process and the shared limiters are one port.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	g, err := l.Take(ctx, key, 1, 0)
	if err != nil {
		return Decision{}, err
	}
	return Decide(g, 1, l.Limit, l.Period), nil
}

// Take implements Taker in process: it returns back tokens to key's bucket
// (up to its capacity), then takes as many whole tokens as it holds, up to
// want.
func (l *Limiter) Take(ctx context.Context, key string, want, back int) (Grant, error) {
	if err := ctx.Err(); err != nil {
		return Grant{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	rate := Rate(l.Limit, l.Period)
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(l.Limit), at: now}
		l.buckets[key] = b
	}
	elapsed := max(now.Sub(b.at).Seconds(), 0) // a clock step back refills nothing
	b.tokens = math.Min(float64(l.Limit), b.tokens+float64(max(back, 0))+elapsed*rate)
	if now.After(b.at) {
		b.at = now
	}
	granted := int(math.Min(float64(max(want, 0)), math.Floor(b.tokens)))
	b.tokens -= float64(granted)
	l.calls++
	if l.calls%4096 == 0 {
		l.prune(now, rate)
	}
	return Grant{Granted: granted, Tokens: b.tokens}, nil
}

// Rate is the refill rate of limit tokens per period, in tokens per second.
func Rate(limit int, period time.Duration) float64 {
	return float64(limit) / period.Seconds()
}

// Decide turns a grant of one request's token(s) into the verdict and the
// header numbers; every adapter answers through it, so they agree to the
// nanosecond. want is how many tokens the request needed (1).
func Decide(g Grant, want, limit int, period time.Duration) Decision {
	rate := Rate(limit, period)
	d := Decision{Limit: limit, Allowed: g.Granted >= want}
	if !d.Allowed {
		d.RetryAfter = time.Duration((float64(want) - g.Tokens) / rate * float64(time.Second))
	}
	d.Remaining = max(int(math.Floor(g.Tokens)), 0)
	d.Reset = time.Duration((float64(limit) - g.Tokens) / rate * float64(time.Second))
	return d
}

// prune forgets buckets that have refilled completely; they equal new ones.
func (l *Limiter) prune(now time.Time, rate float64) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*rate >= float64(l.Limit) {
			delete(l.buckets, k)
		}
	}
}

// Buckets is how many keys the limiter remembers (for tests of pruning).
func (l *Limiter) Buckets() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
