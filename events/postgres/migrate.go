package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/pgmigrate"
)

// The event store's schema, versioned on its own (es_schema_versions), so it
// can share a database with the read models without touching their tables.
//
//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationLock is the pg_advisory_xact_lock key that serialises schema
// changes of the event store across processes (ASCII "evschema").
const migrationLock int64 = 0x6576736368656d61

// migrate brings the event store's schema up to date.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	schema := pgmigrate.Schema{Files: files, Parts: []string{"events"}, Table: "es_schema_versions", Lock: migrationLock}
	if err := schema.Apply(ctx, pool); err != nil {
		return fmt.Errorf("events/postgres: %w", err)
	}
	return nil
}
