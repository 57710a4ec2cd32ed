package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestNewGivesFreshEmptyDatabases(t *testing.T) {
	ctx := context.Background()
	var names [2]string
	for i := range names {
		url := pgtest.New(t)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		var tables int
		if err := conn.QueryRow(ctx, `SELECT current_database(), count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&names[i], &tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("database %s has %d tables, want 0", names[i], tables)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE marker (id int)`); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
	}
	if names[0] == names[1] || names[0][:2] != "t_" {
		t.Errorf("database names %q, want two distinct t_ names", names)
	}
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	ctx := context.Background()
	var name string
	var conn *pgx.Conn
	t.Run("uses", func(t *testing.T) {
		var err error
		// The connection stays open past the subtest: the drop must
		// not wait for it (WITH (FORCE)).
		conn, err = pgx.Connect(ctx, pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	if conn != nil {
		defer conn.Close(ctx)
	}
	if t.Failed() || name == "" {
		return
	}
	admin, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test ended", name)
	}
}
