package idempotency_test

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/idempotency/signedtest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
	projpostgres "github.com/healthtech/partner-open-platform/projections/postgres"
)

// Signed writes are recorded in and replayed from the read-model stores
// that keep the nodes' bindings: in memory, and Postgres (shared by the
// nodes of a cluster). The embedded files run the suite in their own
// packages (internal/nonces/bolt, internal/nonces/filelog).
func TestSignedWriteRecordsOnTheReadModelStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		signedtest.Run(t, func(t *testing.T) idempotency.SignedStore { return projmemory.New() })
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.New(t)
		signedtest.Run(t, func(t *testing.T) idempotency.SignedStore {
			s, err := projpostgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
}

// The Postgres read-model store claims a signed write at the log's head.
var _ idempotency.HeadRouteClaimer = (*projpostgres.Store)(nil)
