package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
	"github.com/healthtech/partner-open-platform/projections/storetest"
)

func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Store { return open(t, postgres.MigratedDB(t)) })
}

func exec(t *testing.T, url string, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// appliedMigrations lists the applied migrations as part/version, in order.
func appliedMigrations(t *testing.T, url string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT part || '/' || version FROM schema_versions ORDER BY part, version`)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// Opening a migrated database again applies nothing and keeps the rows.
func TestOpenTwiceKeepsSchemaAndRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	s := open(t, url)
	pos := events.Position{Commit: 3, Prepare: 2}
	err := s.Update(ctx, "p", pos, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c"})
	})
	if err != nil {
		t.Fatal(err)
	}
	first := appliedMigrations(t, url)
	s.Close()

	s = open(t, url)
	defer s.Close()
	if got := appliedMigrations(t, url); len(got) != len(first) || len(got) == 0 {
		t.Errorf("migrations after second Open = %v, want %v", got, first)
	}
	if got, err := s.Checkpoint(ctx, "p"); err != nil || got != pos {
		t.Errorf("Checkpoint after reopen = %v, %v; want %v", got, err, pos)
	}
	if _, err := s.User(ctx, 1, 1); err != nil {
		t.Errorf("User after reopen: %v", err)
	}
}

// Two processes starting together on an empty database both succeed and
// apply each migration once (the advisory lock serialises them).
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	const n = 2
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(context.Background(), url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		stores[i].Close()
	}
	vs := appliedMigrations(t, url)
	if got := strings.Join(vs, " "); got != "audit/1 benefits/1 cluster/1 cluster/2 common/1 common/2 common/3 deliveries/1 deliveries/2 deliveries/3 endpoints/1 nonces/1 nonces/2 orders/1 ownership/1 portalapps/1 reports/1 snapshots/1 snapshots/2 users/1 users/2 users/3" {
		t.Errorf("schema_versions = %s, want every part's migrations once", got)
	}
}

// TestUpgradeFromOneSequence: a database migrated by the release with one
// migration sequence and one read_models checkpoint opens without migrating
// its tables again, and every read model starts at the old checkpoint (no replay).
func TestUpgradeFromOneSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	s := open(t, url)
	if err := s.Update(ctx, "users", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c"})
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Make it look as the earlier release left it.
	exec(t, url, `DELETE FROM checkpoints;
INSERT INTO checkpoints (projection, commit_pos, prepare_pos) VALUES ('read_models', 77, 76);
DROP TABLE schema_versions;
DROP TABLE nonce_bindings;
DROP TABLE user_snapshots;
DROP VIEW user_snapshot_docs;
ALTER TABLE family_members DROP COLUMN snapshot_json, DROP COLUMN snapshot_json_at;
DROP FUNCTION snapshot_member_json(family_members);
DROP FUNCTION checkpoint_backwards(text);
DROP TABLE audit_facts;
DROP TABLE rate_buckets;
DROP TABLE cluster_settings;
ALTER TABLE webhook_deliveries DROP COLUMN last_error_class;
ALTER TABLE webhook_deliveries DROP COLUMN subject;
ALTER TABLE webhook_attempts DROP COLUMN error_class;
ALTER TABLE webhook_deliveries DROP COLUMN endpoint_id;
ALTER TABLE webhook_attempts DROP COLUMN response_excerpt;
DROP TABLE family_generations;
DROP TABLE erasure_purge;
ALTER TABLE service_providers DROP COLUMN developer_id;
ALTER TABLE service_providers DROP COLUMN review_notes;
CREATE TABLE schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
INSERT INTO schema_migrations (version) SELECT generate_series(1, 7)`)

	s = open(t, url)
	defer s.Close()
	for _, f := range projections.ReadModels {
		if f == projections.ReadModelAudit {
			continue // newer than that release: it starts from the log's beginning (below)
		}
		if got, err := s.Checkpoint(ctx, string(f)); err != nil || got != (events.Position{Commit: 77, Prepare: 76}) {
			t.Errorf("%s checkpoint after the upgrade = %v, %v; want 77/76", f, got, err)
		}
	}
	if got, _ := s.Checkpoint(ctx, string(projections.ReadModelAudit)); !got.IsZero() {
		t.Errorf("the audit family, new since, starts at %v, want the log's beginning", got)
	}
	if got, _ := s.Checkpoint(ctx, "read_models"); !got.IsZero() {
		t.Errorf("the shared checkpoint survived the upgrade: %v", got)
	}
	if _, err := s.User(ctx, 1, 1); err != nil {
		t.Errorf("rows lost in the upgrade: %v", err)
	}
	if snap, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, ChannelUserID: "c"}); err != nil || !snap.Found || snap.User.OpenUserID != 1 {
		t.Errorf("the snapshot of a user written before the upgrade: %+v, %v; want user 1 (backfilled)", snap, err)
	}
	// An apply on the upgraded schema, whose checkpoint guard migration common/0003 adds.
	if err := s.Update(ctx, "users", events.Position{Commit: 78, Prepare: 78}, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 2, ChannelUserID: "d"})
	}); err != nil {
		t.Errorf("an apply after the upgrade: %v", err)
	}
	if got := len(appliedMigrations(t, url)); got != 22 {
		t.Errorf("%d migrations recorded after the upgrade, want 22", got)
	}
}

func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	if _, err := postgres.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
}

func BenchmarkUserSnapshotRead(b *testing.B) {
	s := open(b, pgtest.New(b))
	defer s.Close()
	storetest.BenchmarkUserSnapshotRead(b, s)
}
