// Package ratelimittest is the conformance suite of the rate-limiter port:
// the in-process bucket of an embedded node, the shared Postgres bucket and
// a leasing limiter in front of it must all keep a partner to its limit with
// the same header numbers, so all of them run exactly these cases.
package ratelimittest

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/ratelimit"
)

// Limiter is the port under test, as auth and queryapi consume it.
type Limiter interface {
	Allow(ctx context.Context, key string) (ratelimit.Decision, error)
}

// Open builds, for one case, two nodes' limiters over one set of buckets
// (an in-process limiter returns itself twice) of limit requests per
// period, judging time by now.
type Open func(t *testing.T, limit int, period time.Duration, now func() time.Time) (a, b Limiter)

// Clock is a settable clock safe for concurrent readers.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at a fixed instant, so cases never depend on the
// machine's time.
func NewClock() *Clock { return &Clock{t: time.Unix(1_700_000_000, 0)} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Run checks every promise of the port. slack is how many tokens an
// adapter may leave unused when many callers race on two nodes (a leasing
// limiter may end with tokens leased out but unused); no adapter may ever
// admit more than the limit.
func Run(t *testing.T, open Open, slack int) {
	t.Run("HeadersAndRefill", func(t *testing.T) { testHeadersAndRefill(t, open) })
	t.Run("KeysAreSeparate", func(t *testing.T) { testKeys(t, open) })
	t.Run("SharedAcrossNodes", func(t *testing.T) { testShared(t, open) })
	t.Run("ConcurrentCallersOnTwoNodes", func(t *testing.T) { testConcurrent(t, open, slack) })
}

func allow(t *testing.T, l Limiter, key string) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key)
	if err != nil {
		t.Fatalf("Allow(%q): %v", key, err)
	}
	return d
}

// near compares durations computed in floating point (Postgres keeps
// microseconds) to within a millisecond; these are header numbers, not
// timings.
func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(time.Millisecond)
}

func testHeadersAndRefill(t *testing.T, open Open) {
	clock := NewClock()
	l, _ := open(t, 60, time.Minute, clock.Now)
	for i := range 60 {
		d := allow(t, l, "a")
		if !d.Allowed || d.Remaining != 59-i || d.Limit != 60 {
			t.Fatalf("request %d: %+v, want allowed with %d remaining of 60", i+1, d, 59-i)
		}
		if want := time.Duration(i+1) * time.Second; !near(d.Reset, want) {
			t.Fatalf("request %d: Reset %s, want %s (one second per spent token)", i+1, d.Reset, want)
		}
	}
	d := allow(t, l, "a")
	if d.Allowed || d.Remaining != 0 || !near(d.RetryAfter, time.Second) || !near(d.Reset, time.Minute) {
		t.Fatalf("61st request: %+v, want refused, 0 remaining, Retry-After 1s, Reset 1m", d)
	}
	clock.Add(999 * time.Millisecond)
	if d := allow(t, l, "a"); d.Allowed || !near(d.RetryAfter, time.Millisecond) {
		t.Fatalf("0.999 s later: %+v, want refused with Retry-After 1ms", d)
	}
	clock.Add(2 * time.Millisecond)
	if d := allow(t, l, "a"); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("1.001 s later: %+v, want allowed with 0 remaining", d)
	}
	if d := allow(t, l, "a"); d.Allowed {
		t.Fatalf("the refilled token was admitted twice: %+v", d)
	}
	clock.Add(time.Hour)
	if d := allow(t, l, "a"); !d.Allowed || d.Remaining != 59 {
		t.Fatalf("an hour later: %+v, want a full bucket (59 remaining after this one)", d)
	}
	// A clock that steps back refills nothing and breaks nothing.
	clock.Add(-time.Minute)
	if d := allow(t, l, "a"); !d.Allowed || d.Remaining != 58 {
		t.Fatalf("after the clock stepped back: %+v, want allowed with 58 remaining", d)
	}
}

func testKeys(t *testing.T, open Open) {
	clock := NewClock()
	l, _ := open(t, 2, time.Hour, clock.Now)
	allow(t, l, "1")
	allow(t, l, "1")
	if d := allow(t, l, "1"); d.Allowed {
		t.Fatalf("third request of key 1 within its limit of 2: %+v", d)
	}
	for _, k := range []string{"2", "10", "1 ", ""} {
		if d := allow(t, l, k); !d.Allowed || d.Remaining != 1 {
			t.Errorf("key %q shares key 1's bucket: %+v", k, d)
		}
	}
}

func testShared(t *testing.T, open Open) {
	clock := NewClock()
	a, b := open(t, 3, time.Hour, clock.Now)
	for i := range 3 {
		if d := allow(t, a, "app"); !d.Allowed {
			t.Fatalf("request %d on node A: %+v", i+1, d)
		}
	}
	if d := allow(t, b, "app"); d.Allowed || d.Remaining != 0 {
		t.Fatalf("node B admitted a request beyond the limit node A used up: %+v", d)
	}
	if d := allow(t, a, "app"); d.Allowed {
		t.Fatalf("node A admitted a fourth request: %+v", d)
	}
}

func testConcurrent(t *testing.T, open Open, slack int) {
	const limit, goroutines, calls = 100, 16, 25 // 2 × 16 × 25 = 800 calls for 100 tokens
	clock := NewClock()                          // stopped: nothing refills during the race
	a, b := open(t, limit, time.Hour, clock.Now)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 2*goroutines*calls)
	for i := range 2 * goroutines {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			<-start
			for range calls {
				d, err := l.Allow(context.Background(), "hot")
				if err != nil {
					errs <- err
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Allow: %v", err)
	}
	got := int(allowed.Load())
	if got > limit {
		t.Fatalf("%d requests admitted by two nodes racing on a limit of %d", got, limit)
	}
	if got < limit-slack {
		t.Fatalf("%d requests admitted of a limit of %d; the adapter may leave at most %d unused", got, limit, slack)
	}
	// Nothing is left for anyone, on either node.
	for i, l := range []Limiter{a, b} {
		if d := allow(t, l, "hot"); d.Allowed && got == limit {
			t.Errorf("node %d admitted request %d after the race used up the limit", i, limit+1)
		}
	}
}
