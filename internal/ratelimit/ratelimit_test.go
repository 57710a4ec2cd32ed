package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/internal/ratelimit/ratelimittest"
)

// The in-process bucket of an embedded node: one limiter is both "nodes".
func TestLimiterConformance(t *testing.T) {
	ratelimittest.Run(t, func(t *testing.T, limit int, period time.Duration, now func() time.Time) (a, b ratelimittest.Limiter) {
		l := ratelimit.New(limit, period)
		l.Now = now
		return l, l
	}, 0)
}

// Two leasing nodes over one in-process bucket: the lease logic alone,
// without a database; ratelimit/postgres runs the same over Postgres.
func TestLeasedConformance(t *testing.T) {
	const batch = 10
	ratelimittest.Run(t, func(t *testing.T, limit int, period time.Duration, now func() time.Time) (a, b ratelimittest.Limiter) {
		shared := ratelimit.New(limit, period)
		shared.Now = now
		node := func() *ratelimit.Leased {
			l := ratelimit.NewLeased(shared, limit, period, batch, period) // the node's TTL: the period
			l.Now = now
			return l
		}
		return node(), node()
	}, 2*batch)
}

// A lease that expires unused gives its tokens back: nothing is lost to a
// node that stopped receiving the key's requests.
func TestLeaseGivesBackUnusedTokens(t *testing.T) {
	clock := ratelimittest.NewClock()
	shared := ratelimit.New(20, time.Hour)
	shared.Now = clock.Now
	a := ratelimit.NewLeased(shared, 20, time.Hour, 10, time.Second)
	b := ratelimit.NewLeased(shared, 20, time.Hour, 10, time.Second)
	a.Now, b.Now = clock.Now, clock.Now
	ctx := context.Background()
	if d, _ := a.Allow(ctx, "k"); !d.Allowed { // A leases 10, uses 1
		t.Fatal("first request refused")
	}
	for i := range 10 { // B leases the other 10
		if d, _ := b.Allow(ctx, "k"); !d.Allowed {
			t.Fatalf("B's request %d refused", i+1)
		}
	}
	if d, _ := b.Allow(ctx, "k"); d.Allowed {
		t.Fatal("B admitted an 11th request while A holds the other 9 tokens (the limit is 20)")
	}
	clock.Add(2 * time.Second) // A's lease expired: its 9 tokens go back with A's next take
	if d, _ := a.Allow(ctx, "k"); !d.Allowed || d.Remaining != 8 {
		t.Fatalf("A after its lease expired: %+v, want allowed with 8 remaining", d)
	}
	allowed := 1 + 10 + 1
	for range 20 {
		if d, _ := a.Allow(ctx, "k"); d.Allowed {
			allowed++
		}
	}
	if allowed != 20 {
		t.Fatalf("%d requests admitted in all, want exactly the limit of 20", allowed)
	}
}

// leasedOnAStoppedClock is a node leasing 10 tokens at a time, each lease
// good for a second, from a bucket of 20 an hour, on a clock that moves
// only when the test moves it.
func leasedOnAStoppedClock() (*ratelimit.Leased, *ratelimit.Limiter, *ratelimittest.Clock) {
	clock := ratelimittest.NewClock()
	shared := ratelimit.New(20, time.Hour)
	shared.Now = clock.Now
	l := ratelimit.NewLeased(shared, 20, time.Hour, 10, time.Second)
	l.Now = clock.Now
	return l, shared, clock
}

// A renewal handed to a caller's own statement (Reserve) decides as Allow
// does: the grant settles the lease, requests then come from it without a
// take, an expired lease's tokens go back with the next renewal, and a
// renewal whose statement failed (Cancel) leaves the lease as it was.
func TestLeasedRenewalSettledByTheCaller(t *testing.T) {
	l, shared, clock := leasedOnAStoppedClock()
	ctx := context.Background()
	_, rn := l.Reserve("k")
	if rn == nil || rn.Want != 10 || rn.Back != 0 || rn.Key != "k" {
		t.Fatalf("first request: renewal %+v, want 10 tokens of k, none back", rn)
	}
	g, _ := shared.Take(ctx, rn.Key, rn.Want, rn.Back) // what the caller's statement does
	if d := rn.Settle(g); !d.Allowed || d.Remaining != 19 {
		t.Fatalf("settled: %+v, want allowed with 19 remaining", d)
	}
	for i := range 9 {
		d, rn := l.Reserve("k")
		if rn != nil || !d.Allowed || d.Remaining != 18-i {
			t.Fatalf("request %d from the lease: %+v, renewal %+v", i+2, d, rn)
		}
	}
	_, rn = l.Reserve("k") // the lease is spent
	if rn == nil || rn.Back != 0 {
		t.Fatalf("spent lease: renewal %+v", rn)
	}
	rn.Cancel() // its statement failed: nothing taken
	if rn.Pending() {
		t.Fatal("a cancelled renewal is still pending")
	}
	if g, _ := shared.Take(ctx, "k", 0, 0); g.Tokens != 10 {
		t.Fatalf("the shared bucket holds %v after a cancelled renewal, want 10", g.Tokens)
	}
	_, rn = l.Reserve("k")
	if d := rn.Settle(ratelimit.Grant{Granted: 2, Tokens: 8}); !d.Allowed { // as if the statement took 2
		t.Fatalf("%+v", d)
	}
	clock.Add(2 * time.Second) // the lease expires holding 1 token
	_, rn = l.Reserve("k")
	if rn == nil || rn.Back != 1 {
		t.Fatalf("expired lease: renewal %+v, want its 1 token given back", rn)
	}
	if d, err := rn.TakeNow(ctx); err != nil || !d.Allowed {
		t.Fatalf("TakeNow: %+v, %v", d, err)
	}
}

// Buckets that refilled completely are forgotten, so memory stays bounded
// by the keys recently limited.
func TestPruneKeepsBehaviour(t *testing.T) {
	now := time.Unix(0, 0)
	l := ratelimit.New(2, time.Second)
	l.Now = func() time.Time { return now }
	for i := range 5000 {
		l.Allow(context.Background(), string(rune('a'+i%26)))
		now = now.Add(time.Millisecond)
	}
	if n := l.Buckets(); n > 26 {
		t.Fatalf("%d buckets kept", n)
	}
}

// BenchmarkLimiter is the baseline the shared adapters are compared with:
// one in-process decision.
func BenchmarkLimiter(b *testing.B) {
	l := ratelimit.New(1<<30, time.Minute)
	ctx := context.Background()
	for b.Loop() {
		if _, err := l.Allow(ctx, "app"); err != nil {
			b.Fatal(err)
		}
	}
}

// takeCounter counts the takes a leasing node makes on its shared bucket.
type takeCounter struct {
	ratelimit.Taker
	takes int
}

func (c *takeCounter) Take(ctx context.Context, key string, want, back int) (ratelimit.Grant, error) {
	c.takes++
	return c.Taker.Take(ctx, key, want, back)
}

// A key called every few seconds is served from its lease for the lease's
// whole TTL, so it renews once per Batch calls rather than on every call,
// and the headers count the shared bucket's refill since the lease was
// taken.
func TestLeaseServesASparseKeyForItsTTL(t *testing.T) {
	clock := ratelimittest.NewClock()
	shared := ratelimit.New(6000, time.Minute)
	shared.Now = clock.Now
	counter := &takeCounter{Taker: shared}
	l := ratelimit.NewLeased(counter, 6000, time.Minute, 10, time.Minute)
	l.Now = clock.Now
	ctx := context.Background()
	for i := range 10 {
		// Each call finds the bucket refilled (100 tokens a second) and
		// leaves one token less than the limit, as a renewal would say.
		d, err := l.Allow(ctx, "sparse")
		if err != nil || !d.Allowed || d.Remaining != 5999 {
			t.Fatalf("call %d, %d s after the first: %+v %v, want allowed with 5999 remaining", i+1, 5*i, d, err)
		}
		clock.Add(5 * time.Second)
	}
	if counter.takes != 1 {
		t.Fatalf("%d takes for 10 calls 5 s apart within one lease's TTL, want 1", counter.takes)
	}
	if _, err := l.Allow(ctx, "sparse"); err != nil || counter.takes != 2 {
		t.Fatalf("the spent lease renewed with %d takes in all (%v), want 2", counter.takes, err)
	}
}

// A token Reserve admitted for a request that then spent nothing goes back
// to the lease: the key's requests still get exactly the limit, and a
// refund to an expired lease goes back to the shared bucket with its
// renewal.
func TestRefundedTokenIsAdmittedAgain(t *testing.T) {
	l, _, _ := leasedOnAStoppedClock()
	ctx := context.Background()
	if d, _ := l.Allow(ctx, "k"); !d.Allowed { // leases 10, admits 1
		t.Fatal("first request refused")
	}
	d, rn := l.Reserve("k")
	if rn != nil || !d.Allowed {
		t.Fatalf("from the lease: %+v, renewal %+v", d, rn)
	}
	l.Refund("k") // that request was a replay: it spent nothing
	admitted := 1
	for range 30 {
		if d, _ := l.Allow(ctx, "k"); d.Allowed {
			admitted++
		}
	}
	if admitted != 20 {
		t.Fatalf("%d requests admitted with one refund, want exactly the limit of 20", admitted)
	}

	// An expired lease gives a refunded token back with its renewal.
	l2, _, clock2 := leasedOnAStoppedClock()
	l2.Allow(ctx, "k") // leases 10, admits 1: 9 left
	l2.Reserve("k")    // admits 1: 8 left
	clock2.Add(2 * time.Second)
	l2.Refund("k") // after the lease expired: 9 to give back
	if _, rn := l2.Reserve("k"); rn == nil || rn.Back != 9 {
		t.Fatalf("renewal after a refund to an expired lease: %+v, want 9 tokens back", rn)
	} else {
		rn.Cancel()
	}
}
