package node_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// TestNodeOnPostgresEventStore runs a node whose log is the Postgres event
// store (a postgres:// PLATFORM_EVENTSTORE_URL), sharing one database with
// the read models: a registration is read back as a snapshot, its webhook
// is delivered, and a restarted node on the same database still has it.
func TestNodeOnPostgresEventStore(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	cfg := node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, WebhookAllowLoopback: true}
	p := start(t, cfg)
	if got := p.node.Adapters["event store"]; got != "Postgres" {
		t.Fatalf("event store adapter %q, want Postgres", got)
	}
	a := p.createApp("partner")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	p.configureWebhook(a, rcv.srv.URL+"/hooks", "user.family_member.created")

	var reg registerData
	a.expect("POST", "/open/v1/channel/users", registerBody("pg-1"), http.StatusCreated, "0").data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	before := a.snapshot(user)
	if before.User.OpenUserID != reg.OpenUserID || len(before.FamilyMembers) != 2 {
		t.Fatalf("snapshot %+v after registering %+v", before, reg)
	}
	got := rcv.waitFor(2)
	rcv.quiet(2, 200*time.Millisecond)
	for _, w := range got {
		if !w.Verified || w.Event != "user.family_member.created" {
			t.Fatalf("webhook %+v", w)
		}
	}

	p.stop()
	r := start(t, cfg)
	a.p = r
	if after := a.snapshot(user); fmt.Sprintf("%+v", deref(after)) != fmt.Sprintf("%+v", deref(before)) {
		t.Fatalf("after restart %+v, before %+v", deref(after), deref(before))
	}
}
