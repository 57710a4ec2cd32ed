package erasure_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/jackc/pgx/v5/pgxpool"
)

// With Postgres read models, a node purges the tables holding personal
// fields after an erasure: within the purge interval the erased person's
// name and id number are gone from the users and members relation files,
// while a person kept is still readable.
func TestErasurePurgeRemovesPlaintextFromTheTableFiles(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), PostgresURL: db, ErasurePurgeInterval: 200 * time.Millisecond})
	a := p.CreateApp("partner")
	marker := fmt.Sprintf("PURGE-%d", time.Now().UnixNano())
	kept := harness.RegisterBody("u-kept")
	a.Expect("POST", "/open/v1/channel/users", kept, http.StatusCreated, "0")
	body := harness.RegisterBody("u-purged")
	body["user"].(map[string]any)["name"] = marker + "-name"
	body["family_members"].([]any)[0].(map[string]any)["name"] = marker + "-member"
	var gone harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", body, http.StatusCreated, "0").Data(t, &gone)
	if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID), map[string]any{"reason": "ticket 3"}); res.Status != http.StatusOK {
		t.Fatalf("erase: %d %s", res.Status, res.Raw)
	}
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	deadline := time.Now().Add(harness.WaitBound)
	for {
		var purged bool
		if err := pool.QueryRow(ctx, `SELECT purged_commit > 0 AND (purged_commit, purged_prepare) >= (erased_commit, erased_prepare) FROM erasure_purge`).Scan(&purged); err != nil {
			t.Fatal(err)
		}
		if purged {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no purge after the erasure")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		t.Skipf("reading relation files needs a superuser: %v", err)
	}
	for _, table := range []string{"users", "family_members", "user_snapshots"} {
		var found bool
		if err := pool.QueryRow(ctx, `SELECT position(convert_to($1, 'UTF8') IN pg_read_binary_file(pg_relation_filepath($2::regclass))) > 0`, marker, table).Scan(&found); err != nil {
			t.Skipf("reading relation files: %v", err)
		}
		if found {
			t.Errorf("after the purge %s's file still holds the erased person's %q", table, marker)
		}
	}
	a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=u-kept", nil, http.StatusOK, "0")
}
