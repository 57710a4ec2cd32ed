package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
	"github.com/healthtech/partner-open-platform/projections/storetest"
)

func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) projections.Store { return open(t, pgtest.New(t)) })
}

func appliedMigrations(t *testing.T, url string) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// Opening a migrated database again applies nothing and keeps the rows.
func TestOpenTwiceKeepsSchemaAndRows(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	s := open(t, url)
	pos := events.Position{Commit: 3, Prepare: 2}
	err := s.Update(ctx, "p", pos, func(tx projections.Tx) error {
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c"})
	})
	if err != nil {
		t.Fatal(err)
	}
	first := appliedMigrations(t, url)
	s.Close()

	s = open(t, url)
	defer s.Close()
	if got := appliedMigrations(t, url); len(got) != len(first) || len(got) == 0 {
		t.Errorf("migrations after second Open = %v, want %v", got, first)
	}
	if got, err := s.Checkpoint(ctx, "p"); err != nil || got != pos {
		t.Errorf("Checkpoint after reopen = %v, %v; want %v", got, err, pos)
	}
	if _, err := s.User(ctx, 1, 1); err != nil {
		t.Errorf("User after reopen: %v", err)
	}
}

// Two processes starting together on an empty database both succeed and
// apply each migration once (the advisory lock serialises them).
func TestConcurrentOpen(t *testing.T) {
	url := pgtest.New(t)
	const n = 2
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(context.Background(), url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		stores[i].Close()
	}
	vs := appliedMigrations(t, url)
	for i, v := range vs {
		if v != i+1 {
			t.Errorf("schema_migrations = %v, want 1..n once each", vs)
			break
		}
	}
}

func TestOpenBadURL(t *testing.T) {
	if _, err := postgres.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
}

func BenchmarkUserSnapshotRead(b *testing.B) {
	s := open(b, pgtest.New(b))
	defer s.Close()
	storetest.BenchmarkUserSnapshotRead(b, s)
}
