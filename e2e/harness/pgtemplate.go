package harness

import (
	"context"
	"errors"
	"testing"

	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	keyspg "github.com/healthtech/partner-open-platform/internal/datakeys/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	pgreadmodels "github.com/healthtech/partner-open-platform/projections/postgres"
	relaypg "github.com/healthtech/partner-open-platform/relay/postgres"
	webhookspg "github.com/healthtech/partner-open-platform/webhooks/postgres"
)

// NodeDB is a fresh database with every schema a node opens on Postgres
// (event store, read models, keys, leases, delivery claims, relay
// checkpoints) already migrated: a copy of a template migrated once per
// test binary, instead of each node running every migration. Both the
// event store and the read models may use it.
func NodeDB(t testing.TB) string {
	t.Helper()
	return pgtest.Migrated(t, "node", migrateNode)
}

// migrateNode opens (and so migrates) and closes each Postgres adapter a
// node uses.
func migrateNode(ctx context.Context, url string) error {
	events, err := pgevents.Open(ctx, url)
	if err != nil {
		return err
	}
	errs := []error{events.Close()}
	readModels, err := pgreadmodels.Open(ctx, url)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, readModels.Close())
	keyStore, err := keyspg.Open(ctx, url)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, keyStore.Close())
	claims, err := webhookspg.Open(ctx, url)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, claims.Close())
	relay, err := relaypg.Open(ctx, url, "template")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, relay.Close())...)
}
