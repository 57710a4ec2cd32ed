package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Each schema part has its own folder of migrations, versioned on its own:
// common (the checkpoints), one folder per read-model family, and nonces.
//
//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationParts is the order in which parts are brought up to date.
var migrationParts = []string{"common", "users", "deliveries", "reports", "nonces", "orders", "benefits", "audit"}

// legacyVersions maps the versions of the single migration sequence of
// earlier releases (table schema_migrations) to the parts they became, so a
// database they migrated is not migrated again.
var legacyVersions = map[int][][2]any{
	1: {{"common", 1}, {"users", 1}},
	2: {{"users", 2}},
	3: {{"deliveries", 1}},
	4: {{"reports", 1}},
	5: {{"nonces", 1}},
	6: {{"orders", 1}},
	7: {{"benefits", 1}},
}

// migrationLock is the pg_advisory_xact_lock key that serialises schema
// changes of the read-model store across processes (ASCII "readmodl").
const migrationLock int64 = 0x726561646d6f646c

type migration struct {
	part    string
	version int
	name    string
	sql     string
}

// migrations returns a part's embedded migrations in version order; a file
// is named NNNN_description.sql and versions run 1, 2, 3... without gaps.
func migrations(part string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations/"+part)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 || path.Ext(name) != ".sql" {
			return nil, fmt.Errorf("projections/postgres: migration %s/%q is not named NNNN_description.sql", part, name)
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+part+"/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{part: part, version: v, name: part + "/" + name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("projections/postgres: migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database lacks, part by part, each in
// its own transaction under the advisory lock, so processes starting
// together apply each exactly once and a failed migration leaves the ones
// before it.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	err := locked(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_versions (
    part       text        NOT NULL,
    version    int         NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (part, version)
)`); err != nil {
			return err
		}
		return adoptLegacy(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("projections/postgres: create schema_versions: %w", err)
	}
	for _, part := range migrationParts {
		ms, err := migrations(part)
		if err != nil {
			return err
		}
		for _, m := range ms {
			err := locked(ctx, pool, func(tx pgx.Tx) error {
				var done bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_versions WHERE part = $1 AND version = $2)`,
					m.part, m.version).Scan(&done); err != nil || done {
					return err
				}
				// No arguments: pgx sends it with the simple protocol, which
				// allows the several statements of a migration file.
				if _, err := tx.Exec(ctx, m.sql); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO schema_versions (part, version) VALUES ($1, $2)`, m.part, m.version)
				return err
			})
			if err != nil {
				return fmt.Errorf("projections/postgres: migration %s: %w", m.name, err)
			}
		}
	}
	return nil
}

// adoptLegacy records, once, the migrations an earlier release applied
// under its single sequence, then drops that table.
func adoptLegacy(ctx context.Context, tx pgx.Tx) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return err
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return err
	}
	for _, v := range versions {
		for _, pv := range legacyVersions[v] {
			if _, err := tx.Exec(ctx, `INSERT INTO schema_versions (part, version) VALUES ($1, $2) ON CONFLICT DO NOTHING`, pv[0], pv[1]); err != nil {
				return err
			}
		}
	}
	_, err = tx.Exec(ctx, `DROP TABLE schema_migrations`)
	return err
}

// locked runs fn in a transaction holding the migration lock.
func locked(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		return fn(tx)
	})
}
