package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The daily report and the phone binding must each read one index range in
// the order they return, never sort or scan the table.
func TestReportQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// On an empty table a sequential scan is cheapest; forbid it to see
	// which index the planner can use.
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	// A generic plan, as a prepared statement reused by the pool gets: the
	// partial phone index must be usable without knowing the phone.
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name, sql string
		args      []any
		index     string
	}{
		{"ReportsOfDay", reportsOfDayQuery, []any{int64(1), int64(10), "2024-03-05"}, "reports_user_day_idx"},
		{"UserByPhone", userByPhoneQuery, []any{int64(1), "13800138000"}, "users_app_phone_idx"},
	} {
		rows, _ := conn.Query(ctx, "EXPLAIN "+q.sql, q.args...)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", q.name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, " using "+q.index+" ") {
			t.Errorf("%s does not use %s:\n%s", q.name, q.index, plan)
		}
		if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Filter:") {
			t.Errorf("%s sorts, scans or filters:\n%s", q.name, plan)
		}
	}
}

// Pruning deletes expired nonces only, at most limit per call, so the table
// stays near the nonces still valid without one call doing unbounded work.
func TestPruneNonces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	now := time.Now()
	const expired, live = 250, 40
	if _, err := s.pool.Exec(ctx, `INSERT INTO nonces (scope, nonce, expires_at)
SELECT 'sig', 'old-' || i, $1::timestamptz - i * interval '1 second' FROM generate_series(1, $2::int) i
UNION ALL
SELECT 'sig', 'new-' || i, $1::timestamptz + interval '1 hour' FROM generate_series(1, $3::int) i`,
		now, expired, live); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM nonces`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, want := range []int64{100, 100, 50, 0} {
		n, err := s.pruneNonces(ctx, now, 100)
		if err != nil || n != want {
			t.Fatalf("prune %d = %d, %v; want %d", i, n, err, want)
		}
	}
	if n := count(); n != live {
		t.Errorf("%d nonces after pruning, want the %d live ones", n, live)
	}
	for i := 1; i <= live; i++ {
		fresh, err := s.Use(ctx, "sig", fmt.Sprintf("new-%d", i), now.Add(time.Hour))
		if err != nil || fresh {
			t.Fatalf("Use of live nonce %d after pruning = %v, %v; want false", i, fresh, err)
		}
	}
}
