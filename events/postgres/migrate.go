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

// The event store's schema, versioned on its own (es_schema_versions), so it
// can share a database with the read models without touching their tables.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the pg_advisory_xact_lock key that serialises schema
// changes of the event store across processes (ASCII "evschema").
const migrationLock int64 = 0x6576736368656d61

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order; a file is
// named NNNN_description.sql and versions run 1, 2, 3... without gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 || path.Ext(name) != ".sql" {
			return nil, fmt.Errorf("events/postgres: migration %q is not named NNNN_description.sql", name)
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("events/postgres: migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database lacks, each in its own
// transaction under the advisory lock, so nodes starting together apply
// each exactly once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	err = locked(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS es_schema_versions (
    version    int         PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("events/postgres: create es_schema_versions: %w", err)
	}
	for _, m := range ms {
		err := locked(ctx, pool, func(tx pgx.Tx) error {
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM es_schema_versions WHERE version = $1)`, m.version).Scan(&done); err != nil || done {
				return err
			}
			// No arguments: the simple protocol allows several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO es_schema_versions (version) VALUES ($1)`, m.version)
			return err
		})
		if err != nil {
			return fmt.Errorf("events/postgres: migration %s: %w", m.name, err)
		}
	}
	return nil
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
