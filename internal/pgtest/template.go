package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Migrate brings the empty database at url to the schema a test wants
// (opening each Postgres adapter does it); it must close every connection
// it opened before returning, as a template database cannot be copied while
// in use.
type Migrate func(ctx context.Context, url string) error

// templates remembers, per test binary, the template each name resolved to.
var templates sync.Map // name -> *template

type template struct {
	once sync.Once
	db   string
	err  error
}

// Migrated is New, except that the database is a copy (CREATE DATABASE ...
// TEMPLATE) of a template that migrate brought up to date once: running
// every migration for each test costs more than copying a migrated
// database. The template is named after name and a hash of the module's
// schema sources (SchemaHash), so a changed migration makes a new template
// and packages testing at the same time share one; it is built under an
// advisory lock on the server, so they never build it twice or see it half
// built. Tests of the migrations themselves must use New.
func Migrated(t testing.TB, name string, migrate Migrate) string {
	t.Helper()
	admin := server(t) // skips or fails without a server
	v, _ := templates.LoadOrStore(name, &template{})
	tpl := v.(*template)
	tpl.once.Do(func() { tpl.db, tpl.err = buildTemplate(admin, name, migrate) })
	if tpl.err != nil {
		t.Fatalf("pgtest: template %s: %v", name, tpl.err)
	}
	return create(t, admin, " TEMPLATE "+tpl.db)
}

// buildTemplate returns the name of the template database for name and the
// current schema sources, building it if no process has yet.
func buildTemplate(admin, name string, migrate Migrate) (string, error) {
	hash, err := SchemaHash()
	if err != nil {
		return "", err
	}
	db := "tpl_" + name + "_" + hash[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	sum := sha256.Sum256([]byte(db))
	lock := int64(0)
	for _, b := range sum[:8] {
		lock = lock<<8 | int64(b)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lock); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lock) //nolint:errcheck // the session ends right after
	var ready bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, db).Scan(&ready); err != nil {
		return "", err
	}
	if ready {
		return db, nil
	}
	// Built under another name and renamed once migrated, so a process
	// that died half way leaves only a building copy, dropped here.
	building := db + "_b"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path, u.RawPath = "/"+building, ""
	if err := migrate(ctx, u.String()); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	// Whatever the adapters left open (a listener closing late) goes.
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, building); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+db); err != nil {
		return "", err
	}
	return db, nil
}

var schemaHash struct {
	once sync.Once
	sum  string
	err  error
}

// SchemaHash hashes the module's schema sources: every .sql file, and every
// non-test Go file of a postgres or pgmigrate package (some hold their DDL
// inline), by path and content. It errs on the side of a new template: any
// change to a Postgres adapter names a new one.
func SchemaHash() (string, error) {
	schemaHash.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			schemaHash.err = err
			return
		}
		var files []string
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "sdk" || n == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			dir := filepath.Base(filepath.Dir(path))
			if strings.HasSuffix(path, ".sql") || (strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && (dir == "postgres" || dir == "pgmigrate")) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			schemaHash.err = err
			return
		}
		sort.Strings(files)
		h := sha256.New()
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				schemaHash.err = err
				return
			}
			rel, _ := filepath.Rel(root, f)
			fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(data))
			h.Write(data)
		}
		schemaHash.sum = hex.EncodeToString(h.Sum(nil))
	})
	return schemaHash.sum, schemaHash.err
}

// moduleRoot is the nearest directory above the working directory (a test's
// package directory) holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
