package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

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

// Migrated databases are copies of one template, migrated once per test
// binary however many tests (here in parallel) ask for one; each copy is
// its own database, so a test's rows are not another's.
func TestMigratedCopiesOneTemplateMigratedOnce(t *testing.T) {
	// Its count of migrations is read outside the copies, which skip
	// without a server; so it skips as a whole.
	if os.Getenv(pgtest.EnvURL) == "" {
		t.Skip("Postgres tests skipped: " + pgtest.EnvURL + " is not set; run scripts/test.sh")
	}
	var migrations atomic.Int32
	migrate := func(ctx context.Context, url string) error {
		migrations.Add(1)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE TABLE migrated (id int PRIMARY KEY); INSERT INTO migrated VALUES (1)`)
		return err
	}
	// A name of this run only, so the template is built here, not found.
	name := fmt.Sprintf("pgtest%d", time.Now().UnixNano())
	t.Cleanup(func() {
		hash, err := pgtest.SchemaHash()
		if err != nil {
			return
		}
		admin, err := pgx.Connect(context.Background(), os.Getenv(pgtest.EnvURL))
		if err != nil {
			return
		}
		defer admin.Close(context.Background())
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS tpl_"+name+"_"+hash[:16])
	})
	t.Run("copies", func(t *testing.T) {
		for i := range 6 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, pgtest.Migrated(t, name, migrate))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				var rows int
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM migrated`).Scan(&rows); err != nil {
					t.Fatalf("the copy lacks the migrated table: %v", err)
				}
				if rows != 1 {
					t.Fatalf("the copy has %d rows, want the template's 1: another test's rows leaked in", rows)
				}
				if _, err := conn.Exec(ctx, `INSERT INTO migrated VALUES (2)`); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	if n := migrations.Load(); n != 1 {
		t.Errorf("migrated %d times, want once", n)
	}
}
