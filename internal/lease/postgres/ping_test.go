package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// Renewals come every third of the time to live, and pgx pings a pooled
// connection idle for more than a second before handing it out, a second
// round trip for each renewal; leasepg.ShouldPing skips that ping for them.
// The one renewal that pings is the retry after a renewal failed on a
// connection the server ended, so the pool drops its dead connections and
// the retry succeeds.
func TestRenewalsSkipThePoolsPingUntilOneFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	var pings atomic.Int64
	pool := migratedPool(t, url, func(cfg *pgxpool.Config) {
		cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
			ping := leasepg.ShouldPing(ctx, p)
			if ping {
				pings.Add(1)
			}
			return ping
		}
	})
	s := leasepg.New(pool)
	defer s.Close()
	l, err := s.Acquire(ctx, "relay", "node-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	renew := func() error {
		time.Sleep(1100 * time.Millisecond) // the pooled connection idles past pgx's second
		l2, err := s.Renew(ctx, l, time.Minute)
		if err == nil {
			l = l2
		}
		return err
	}
	for i := 0; i < 3; i++ {
		if err := renew(); err != nil {
			t.Fatal(err)
		}
	}
	if n := pings.Load(); n != 0 {
		t.Fatalf("three renewals after idle seconds pinged %d times, want 0", n)
	}

	// The pool holds several idle connections, and the server ends them
	// (not the lease session): without a ping, each would fail a renewal.
	var conns []*pgxpool.Conn
	for i := 0; i < 4; i++ {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	pings.Store(0)
	admin, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ended int
	if err := admin.QueryRow(ctx, `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> 'platform lease session'`).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended < 4 {
		t.Fatalf("ended %d pooled connections, want 4", ended)
	}
	if err := renew(); err == nil {
		t.Fatal("a renewal on a connection the server ended succeeded without a ping")
	}
	if err := renew(); err != nil {
		t.Fatalf("the renewal after a failed one: %v", err)
	}
	if n := pings.Load(); n < 3 {
		t.Fatalf("the renewal after a failed one pinged %d connections, want the 3 dead ones left", n)
	}
	if _, err := s.Renew(ctx, l, time.Minute); err != nil {
		t.Fatal(err)
	}
}
