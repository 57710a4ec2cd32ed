package postgres

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// MigratedDB is a fresh database with the read-model schema already
// migrated: a copy of a template migrated once per test binary
// (pgtest.Migrated), so tests that are not about migrations skip running
// them. Exported for this package's external tests.
func MigratedDB(t testing.TB) string {
	t.Helper()
	return pgtest.Migrated(t, "readmodels", func(ctx context.Context, url string) error {
		s, err := Open(ctx, url)
		if err != nil {
			return err
		}
		return s.Close()
	})
}
