// Package ratelimit keeps per-key token buckets, so one partner's burst
// cannot starve the others; it answers with what the rate-limit headers need.
package ratelimit

import (
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

// New builds a limiter of limit requests per period.
func New(limit int, period time.Duration) *Limiter {
	return &Limiter{Limit: limit, Period: period, Now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes one token from key's bucket if it has one.
func (l *Limiter) Allow(key string) Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	rate := float64(l.Limit) / l.Period.Seconds() // tokens per second
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(l.Limit), at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(float64(l.Limit), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	d := Decision{Limit: l.Limit}
	if b.tokens >= 1 {
		b.tokens--
		d.Allowed = true
	} else {
		d.RetryAfter = time.Duration((1 - b.tokens) / rate * float64(time.Second))
	}
	d.Remaining = int(math.Floor(b.tokens))
	d.Reset = time.Duration((float64(l.Limit) - b.tokens) / rate * float64(time.Second))
	l.calls++
	if l.calls%4096 == 0 {
		l.prune(now, rate)
	}
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
