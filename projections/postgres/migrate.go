package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/healthtech/partner-open-platform/internal/pgmigrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Each schema part has its own folder of migrations, versioned on its own:
// common (the checkpoints), one folder per read model, nonces, and
// ownership (the read models' generations, for rebuilds in a cluster).
//
//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationParts is the order in which parts are brought up to date.
var migrationParts = []string{"common", "users", "deliveries", "reports", "nonces", "orders", "benefits", "audit", "ownership", "cluster", "portalapps", "endpoints", "snapshots"}

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

// schema is the read-model store's schema: one folder per part, applied in
// migrationParts order, recorded in schema_versions.
func schema() (pgmigrate.Schema, error) {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return pgmigrate.Schema{}, err
	}
	return pgmigrate.Schema{Files: files, Parts: migrationParts, Table: "schema_versions", Lock: migrationLock, Prepare: adoptLegacy}, nil
}

// migrate brings the read-model store's schema up to date.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	s, err := schema()
	if err != nil {
		return err
	}
	if err := s.Apply(ctx, pool); err != nil {
		return fmt.Errorf("projections/postgres: %w", err)
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
