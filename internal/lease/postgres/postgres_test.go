package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/lease/leasetest"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	leasetest.Run(t, func(t *testing.T) lease.Store {
		s, err := leasepg.Open(context.Background(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
	leasetest.RunCluster(t, func(t *testing.T) leasetest.Cluster {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := leasepg.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		return cluster{pool}
	})
}

// cluster gives each node a store of its own on one database: its own
// session, which Kill closes as a dead process's connection closes.
type cluster struct{ pool *pgxpool.Pool }

func (c cluster) Node(t *testing.T) lease.Store {
	s := leasepg.New(c.pool)
	t.Cleanup(func() { s.Close() })
	return s
}

func (c cluster) Kill(_ *testing.T, s lease.Store) { _ = s.(*leasepg.Store).Close() }

// open returns a migrated store and a pool on the same database with a
// table the tests write to under a fence.
func open(t *testing.T) (*leasepg.Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.New(t)
	s, err := leasepg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	again, err := leasepg.Open(ctx, url) // migrating twice is harmless
	if err != nil {
		t.Fatalf("second migration: %v", err)
	}
	again.Close()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE writes (holder text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return s, pool
}

func fencedWrite(ctx context.Context, pool *pgxpool.Pool, l lease.Lease) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := leasepg.Fence(ctx, tx, l, time.Minute); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO writes (holder) VALUES ($1)`, l.Holder)
		return err
	})
}

func writers(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT holder FROM writes ORDER BY holder`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A write fenced on a lease that another node has since taken fails with
// ErrLost and leaves nothing behind.
func TestFenceRefusesALostLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := open(t)
	a, err := s.Acquire(ctx, "job", "a", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := fencedWrite(ctx, pool, a); err != nil {
		t.Fatalf("write under the live lease: %v", err)
	}
	var b lease.Lease
	for i := 0; ; i++ {
		if b, err = s.Acquire(ctx, "job", "b", time.Minute); err == nil {
			break
		}
		if i > 500 {
			t.Fatalf("takeover: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := fencedWrite(ctx, pool, a); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("write under the lost lease: %v, want ErrLost", err)
	}
	if err := fencedWrite(ctx, pool, b); err != nil {
		t.Fatalf("write under the new lease: %v", err)
	}
	if got := writers(t, pool); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("rows written %v, want [a b]", got)
	}
}

// A database the previous lease schema left (no lease_lost), with a lease
// held, upgrades in place: the held lease still writes, and a stale token's
// write is refused with ErrLost, raised by the function the upgrade adds.
func TestFenceAfterASchemaUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := open(t)
	a, err := s.Acquire(ctx, "job", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP FUNCTION lease_lost(text, bigint);
DELETE FROM lease_schema_versions WHERE part = 'leases' AND version = 3`); err != nil {
		t.Fatal(err)
	}
	if err := leasepg.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := fencedWrite(ctx, pool, a); err != nil {
		t.Fatalf("write under the lease held across the upgrade: %v", err)
	}
	stale := a
	stale.Token--
	if err := fencedWrite(ctx, pool, stale); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("write under a stale token: %v, want ErrLost", err)
	}
	if got := writers(t, pool); len(got) != 1 || got[0] != "a" {
		t.Fatalf("rows written %v, want [a]", got)
	}
}

// A takeover waits for a transaction already fenced on the old token: the
// old holder's write commits before the new holder starts, never after.
func TestTakeoverWaitsForAFencedTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := open(t)
	ttl := 200 * time.Millisecond
	a, err := s.Acquire(ctx, "job", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := leasepg.Fence(ctx, tx, a, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO writes (holder) VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // a's lease has expired, its transaction is still open
	took := make(chan lease.Lease, 1)
	go func() {
		for i := 0; i < 500; i++ {
			if b, err := s.Acquire(ctx, "job", "b", time.Minute); err == nil {
				took <- b
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(took)
	}()
	select {
	case b := <-took:
		t.Fatalf("lease taken (%+v) while a transaction fenced on the old token was open", b)
	case <-time.After(3 * ttl):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the old holder's fenced transaction, begun in time: %v", err)
	}
	b, ok := <-took
	if !ok || b.Token <= a.Token {
		t.Fatalf("takeover after the commit: %+v %v", b, ok)
	}
	if err := fencedWrite(ctx, pool, a); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("old holder's next write: %v, want ErrLost", err)
	}
}

// A holder paused inside a fenced transaction (a stopped process keeps its
// connection) is cut off after the idle bound: the takeover proceeds and
// the paused holder's commit fails.
func TestPausedHolderCannotCommitAfterTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := open(t)
	a, err := s.Acquire(ctx, "job", "a", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := leasepg.Fence(ctx, tx, a, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO writes (holder) VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	var b lease.Lease
	for i := 0; ; i++ { // the pause: a does nothing while b tries
		if b, err = s.Acquire(ctx, "job", "b", time.Minute); err == nil {
			break
		}
		if i > 500 {
			t.Fatalf("takeover behind a paused holder: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("the paused holder committed after the takeover")
	}
	if got := writers(t, pool); len(got) != 0 {
		t.Fatalf("rows written %v, want none", got)
	}
	if b.Token <= a.Token {
		t.Fatalf("token %d after %d", b.Token, a.Token)
	}
}
