package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// The operators' erasures page lists the erasures whose app has not
// acknowledged them, narrows to one app, and drops an acknowledged one; a
// developer does not reach it.
func TestOpsErasuresListsUnacknowledged(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	appendTo := func(stream string, appID int64, ps ...events.Payload) {
		t.Helper()
		for _, pl := range ps {
			ev, err := p.Node.Registry.Encode(pl, events.Metadata{AppID: appID, Actor: "operator:1", OccurredAt: at})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Node.Events.Append(context.Background(), stream, events.Any(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendTo(domain.UserStream(1001), 7, catalog.UserErased{AppID: 7, OpenUserID: 1001, Reason: "ticket 41", ErasedBy: "operator:1", ErasedAt: at})
	appendTo(domain.UserStream(1002), 8, catalog.UserErased{AppID: 8, OpenUserID: 1002, Reason: "ticket 42", ErasedBy: "operator:1", ErasedAt: at})
	appendTo(domain.UserStream(1003), 8, catalog.UserErased{AppID: 8, OpenUserID: 1003, Reason: "ticket 43", ErasedBy: "operator:1", ErasedAt: at},
		catalog.ErasureAcknowledged{AppID: 8, OpenUserID: 1003, AcknowledgedBy: "app:8", AcknowledgedAt: at})

	op := p.Operator()
	var page portaltest.Page
	deadline := time.Now().Add(10 * time.Second)
	for {
		page = op.Get("/portal/ops/erasures")
		if strings.Contains(page.Body, `id="erasure-8-1002"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if page.Status != http.StatusOK || !strings.Contains(page.Body, `id="erasure-7-1001"`) || !strings.Contains(page.Body, `id="erasure-8-1002"`) ||
		!strings.Contains(page.Body, "ticket 42") || strings.Contains(page.Body, `id="erasure-8-1003"`) {
		t.Fatalf("erasures page %d:\n%s", page.Status, page.Body)
	}
	one := op.Get("/portal/ops/erasures?app_id=8")
	if !strings.Contains(one.Body, `id="erasure-8-1002"`) || strings.Contains(one.Body, `id="erasure-7-1001"`) {
		t.Fatalf("app 8's erasures:\n%s", one.Body)
	}
	if bad := op.Get("/portal/ops/erasures?app_id=x"); bad.Status != http.StatusBadRequest {
		t.Fatalf("app_id=x: %d", bad.Status)
	}
	dev, _ := p.Developer(portaltest.Email(t, "dev"), true)
	if got := dev.Get("/portal/ops/erasures"); got.Status != http.StatusSeeOther || got.Location() != "/portal/ops/signin" {
		t.Fatalf("a developer reaches the erasures page: %d %s", got.Status, got.Location())
	}
}
