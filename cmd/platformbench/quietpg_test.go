package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// The idle row's settling leaves autovacuum nothing to do in any database
// it vacuums, the platform's and another one on the same server written
// to before the row (the raw baseline's): no rows inserted or changed
// since the last vacuum and analyse, which is what starts a worker.
func TestVacuumDatabasesLeavesAutovacuumNothing(t *testing.T) {
	ctx := context.Background()
	platform, other := pgtest.New(t), pgtest.New(t)
	var names []string
	for _, url := range []string{platform, other} {
		c := connect(t, url)
		var name string
		if err := c.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		// pg_stat_force_next_flush makes the backend publish its counts as
		// it goes idle, before the answer is sent.
		for _, sql := range []string{`CREATE TABLE appended (id bigint)`, `INSERT INTO appended SELECT generate_series(1, 5000)`, `SELECT pg_stat_force_next_flush()`} {
			if _, err := c.Exec(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ins, mod := pending(t, other); ins != 5000 || mod != 5000 {
		t.Fatalf("before: %d rows inserted since the last vacuum, %d changed since the last analyse, want 5000 and 5000", ins, mod)
	}
	vacuumDatabases(ctx, platform, names)
	for i, url := range []string{platform, other} {
		if ins, mod := pending(t, url); ins != 0 || mod != 0 {
			t.Errorf("%s: %d rows inserted since the last vacuum, %d changed since the last analyse, want 0 and 0", names[i], ins, mod)
		}
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// pending is what autovacuum's thresholds count for the appended table of
// the database at url.
func pending(t *testing.T, url string) (inserted, modified int64) {
	t.Helper()
	err := connect(t, url).QueryRow(context.Background(),
		`SELECT n_ins_since_vacuum, n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'appended'`).Scan(&inserted, &modified)
	if err != nil {
		t.Fatal(err)
	}
	return inserted, modified
}
