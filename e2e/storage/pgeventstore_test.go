package storage_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
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
	p := harness.Start(t, cfg)
	if got := p.Node.Adapters["event store"]; got != "Postgres" {
		t.Fatalf("event store adapter %q, want Postgres", got)
	}
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.family_member.created")

	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("pg-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	before := a.Snapshot(user)
	if before.User.OpenUserID != reg.OpenUserID || len(before.FamilyMembers) != 2 {
		t.Fatalf("snapshot %+v after registering %+v", before, reg)
	}
	got := rcv.WaitFor(2)
	rcv.Quiet(2, 200*time.Millisecond)
	for _, w := range got {
		if !w.Verified || w.Event != "user.family_member.created" {
			t.Fatalf("webhook %+v", w)
		}
	}

	p.Stop()
	r := harness.Start(t, cfg)
	a.P = r
	if after := a.Snapshot(user); fmt.Sprintf("%+v", harness.Deref(after)) != fmt.Sprintf("%+v", harness.Deref(before)) {
		t.Fatalf("after restart %+v, before %+v", harness.Deref(after), harness.Deref(before))
	}
}

// TestMemoryReadModelsOnPostgresEventStore runs in-memory read models over
// the Postgres event store: a delivered webhook's body, which the read
// model reads back from the log once the delivery is final, is the one the
// receiver got, by id and in the feed.
func TestMemoryReadModelsOnPostgresEventStore(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), EventStoreURL: db, WebhookAllowLoopback: true})
	if got := p.Node.Adapters["event store"]; got != "Postgres" {
		t.Fatalf("event store adapter %q, want Postgres", got)
	}
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.family_member.created")
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("pg-mem-1"), http.StatusCreated, "0")
	got := rcv.WaitFor(2)
	sent := map[string]string{}
	for _, w := range got {
		p.WaitDelivery(w.ID, "delivered")
		var d struct {
			Payload json.RawMessage `json:"payload"`
		}
		a.Expect("GET", "/open/v1/webhooks/deliveries/"+w.ID, nil, http.StatusOK, "0").Data(t, &d)
		if string(d.Payload) != string(w.Body) {
			t.Fatalf("delivery %s reads\n%s\nthe receiver got\n%s", w.ID, d.Payload, w.Body)
		}
		sent[w.ID] = string(w.Body)
	}
	seen := 0
	for _, e := range a.FeedPage("", 100).Events {
		if body, ok := sent[e.DeliveryID]; ok {
			if seen++; string(e.Payload) != body {
				t.Fatalf("the feed reads %s as\n%s\nthe receiver got\n%s", e.DeliveryID, e.Payload, body)
			}
		}
	}
	if seen != len(sent) {
		t.Fatalf("the feed holds %d of the %d delivered webhooks", seen, len(sent))
	}
}
