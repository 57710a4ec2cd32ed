package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestWebhooksGoOutWhileTheDeliveryLogIsHeld: with the deliveries read
// model's table locked by another session (its applies wait), a partner's
// PATCHes still get their webhooks, each once; once the lock goes, the
// delivery log shows them delivered. The webhook's creation waits for the
// read models a partner may read on receipt to reflect the PATCH, and the
// delivery log is not one it waits for (a read of it waits for the log's
// head instead).
func TestWebhooksGoOutWhileTheDeliveryLogIsHeld(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, WebhookAllowLoopback: true})
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL, "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-held"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	const patches = 3
	for i := range patches {
		a.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("held-%d", i)}, http.StatusOK, "0")
	}
	got := rcv.WaitFor(patches)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, w := range got {
		if !w.Verified || w.Event != "user.profile.updated" || ids[w.ID] {
			t.Fatalf("webhook %+v: want each PATCH's verified once", w)
		}
		ids[w.ID] = true
	}
	for id := range ids {
		p.WaitDelivery(id, "delivered")
	}
}
