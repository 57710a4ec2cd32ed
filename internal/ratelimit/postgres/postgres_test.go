package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/internal/ratelimit/ratelimittest"
	readmodels "github.com/healthtech/partner-open-platform/projections/postgres"
)

// open migrates a fresh database (the read-model store owns the migrations)
// and returns two stores on it: two nodes' pools.
func open(t testing.TB) (a, b *ratelimitpg.Store) {
	t.Helper()
	url := pgtest.New(t)
	ctx := context.Background()
	rm, err := readmodels.Open(ctx, url)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	rm.Close()
	for _, s := range []**ratelimitpg.Store{&a, &b} {
		if *s, err = ratelimitpg.Open(ctx, url); err != nil {
			t.Fatal(err)
		}
		st := *s
		t.Cleanup(func() { st.Close() })
	}
	return a, b
}

var cases atomic.Int64

// Every case gets a limit of its own name on one database, as the report
// pull and scheme M share the table in production.
func bucketsOn(a, b *ratelimitpg.Store, limit int, period time.Duration, now func() time.Time) (x, y *ratelimitpg.Bucket) {
	name := fmt.Sprintf("case_%d", cases.Add(1))
	x, y = a.Bucket(name, limit, period), b.Bucket(name, limit, period)
	x.Now, y.Now = now, now
	return x, y
}

func TestBucketConformance(t *testing.T) {
	a, b := open(t)
	ratelimittest.Run(t, func(t *testing.T, limit int, period time.Duration, now func() time.Time) (ratelimittest.Limiter, ratelimittest.Limiter) {
		return bucketsOn(a, b, limit, period, now)
	}, 0)
}

func TestLeasedBucketConformance(t *testing.T) {
	const batch = 10
	a, b := open(t)
	ratelimittest.Run(t, func(t *testing.T, limit int, period time.Duration, now func() time.Time) (ratelimittest.Limiter, ratelimittest.Limiter) {
		x, y := bucketsOn(a, b, limit, period, now)
		la, lb := ratelimit.NewLeased(x, limit, period, batch, period), ratelimit.NewLeased(y, limit, period, batch, period)
		la.Now, lb.Now = now, now
		return la, lb
	}, 2*batch)
}

// With the database's own clock (production), the bucket refills in real
// time: a bucket emptied long enough ago is full again. The wait is in
// whole seconds of a fast limit, so no timing is asserted beyond "refilled".
func TestBucketUsesTheDatabaseClock(t *testing.T) {
	a, _ := open(t)
	l := a.Bucket("db_clock", 2, 100*time.Millisecond)
	ctx := context.Background()
	for range 2 {
		if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("Allow: %+v, %v", d, err)
		}
	}
	if d, _ := l.Allow(ctx, "k"); d.Allowed {
		t.Fatal("third request within a limit of 2 admitted")
	}
	for i := 0; ; i++ {
		if d, err := l.Allow(ctx, "k"); err != nil {
			t.Fatal(err)
		} else if d.Allowed {
			break
		}
		if i == 100 {
			t.Fatal("the bucket never refilled by the database's clock")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTakeFailsWithTheCause(t *testing.T) {
	a, _ := open(t)
	l := a.Bucket("closed", 1, time.Minute)
	a.Close()
	if _, err := l.Allow(context.Background(), "k"); err == nil {
		t.Fatal("a decision on a closed pool succeeded")
	}
}

// BenchmarkDecision compares one decision of each adapter with the
// in-process bucket measured in the same run: serial (one caller, the
// latency of a decision) and parallel (many callers on one app's key).
func BenchmarkDecision(b *testing.B) {
	pa, _ := open(b)
	ctx := context.Background()
	const limit = 1 << 30
	adapters := []struct {
		name string
		l    ratelimittest.Limiter
	}{
		{"memory", ratelimit.New(limit, time.Minute)},
		{"postgres", pa.Bucket("bench", limit, time.Minute)},
		{"postgres-leased-10", ratelimit.NewLeased(pa.Bucket("bench_leased", limit, time.Minute), limit, time.Minute, 10, time.Second)},
	}
	for _, a := range adapters {
		b.Run("serial/"+a.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := a.l.Allow(ctx, "app"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, a := range adapters {
		b.Run("parallel/"+a.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := a.l.Allow(ctx, "app"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
