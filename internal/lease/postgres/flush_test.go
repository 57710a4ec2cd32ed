package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// Renewals are an idle node's only writes. Where synchronous_commit is off
// (the benchmark's server), an asynchronous commit wakes the WAL writer,
// which then polls five times a second for ten seconds: renewals every few
// seconds would keep it polling. A renewal's commit is flushed by its own backend
// instead, which shows as its commit record inside the flushed WAL the
// moment the renewal returns (an asynchronous one is flushed by the WAL
// writer up to wal_writer_delay later).
func TestRenewalIsFlushedWhenItReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	pool := migratedPool(t, url, func(cfg *pgxpool.Config) { cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off" })
	admin, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
		t.Skipf("pg_walinspect: %v", err)
	}
	s := leasepg.New(pool)
	defer s.Close()
	l, err := s.Acquire(ctx, "relay", "node-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Five in a row: the first may find the WAL writer asleep and wake it
	// at once, the others find it polling.
	for i := 0; i < 5; i++ {
		var from string
		if err := admin.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&from); err != nil {
			t.Fatal(err)
		}
		if l, err = s.Renew(ctx, l, time.Minute); err != nil {
			t.Fatal(err)
		}
		var flushed bool
		if err := admin.QueryRow(ctx, `
SELECT CASE WHEN pg_current_wal_flush_lsn() <= $1::pg_lsn THEN false ELSE EXISTS (
    SELECT 1 FROM pg_get_wal_records_info($1::pg_lsn, pg_current_wal_flush_lsn()) w
    WHERE w.resource_manager = 'Transaction' AND w.record_type = 'COMMIT'
      AND w.xid = (SELECT xmin FROM leases WHERE name = 'relay')) END`, from).Scan(&flushed); err != nil {
			t.Fatal(err)
		}
		if !flushed {
			t.Fatalf("renewal %d returned before its commit was flushed", i+1)
		}
	}
}
