package directory

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// clearOpener "opens" a sealed secret by dropping its "sealed:" prefix.
type clearOpener struct{}

func (clearOpener) Open(s string) (string, error) { return strings.TrimPrefix(s, "sealed:"), nil }

func applyApps(t *testing.T, a *Apps, ps ...events.Payload) {
	t.Helper()
	batch := make([]events.Envelope, len(ps))
	for i, p := range ps {
		batch[i] = events.Envelope{Payload: p, Metadata: events.Metadata{OccurredAt: time.Unix(int64(i), 0)}}
	}
	if err := a.Apply(context.Background(), batch, events.Position{Commit: uint64(len(ps))}); err != nil {
		t.Fatal(err)
	}
}

// An app's endpoints as the dispatcher sees them: each with its own URL,
// subscription, state and secrets; the default one from the app-level events.
func TestDirectoryKeepsEachEndpoint(t *testing.T) {
	a := NewApps(clearOpener{})
	applyApps(t, a,
		&catalog.AppCreated{AppID: 9, AppKey: "ak", SealedAppSecret: "sealed:as", SealedWebhookSecret: "sealed:w0", WebhookURL: "https://a.example/h", WebhookEvents: []string{"order.*"}},
		&catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 31, URL: "https://b.example/h", Events: []string{"health.report.*"}, SealedWebhookSecret: "sealed:w31"},
		&catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 30, URL: "https://c.example/h", SealedWebhookSecret: "sealed:w30"},
		&catalog.AppWebhookEndpointSecretIssued{AppID: 9, EndpointID: 31, SealedPendingWebhookSecret: "sealed:w31b"},
		&catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 30},
		&catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 0},
		&catalog.AppWebhookEndpointAdded{AppID: 404, EndpointID: 32, URL: "https://x.example", SealedWebhookSecret: "sealed:x"}, // no such app
	)
	before, _ := a.ByID(9)
	if ids := endpointIDs(before.WebhookEndpoints()); !slices.Equal(ids, []int64{0, 30, 31}) {
		t.Fatalf("endpoints %v, want the default, then by id", ids)
	}
	if def, ok := before.Endpoint(0); !ok || def.URL != "https://a.example/h" || def.Secret != "w0" || !def.Disabled {
		t.Fatalf("default endpoint %+v", def)
	}
	e31, _ := before.Endpoint(31)
	if e31.Secret != "w31" || e31.PendingSecret != "w31b" || e31.Disabled || !slices.Equal(e31.Events, []string{"health.report.*"}) {
		t.Fatalf("endpoint 31 %+v: the pending secret signs nothing until activated", e31)
	}
	if e30, _ := before.Endpoint(30); !e30.Disabled || e30.Secret != "w30" {
		t.Fatalf("endpoint 30 %+v", e30)
	}

	applyApps(t, a,
		&catalog.AppWebhookEndpointSecretActivated{AppID: 9, EndpointID: 31},
		&catalog.AppWebhookEndpointUpdated{AppID: 9, EndpointID: 31, URL: "https://b.example/v2"},
		&catalog.AppWebhookEndpointEnabled{AppID: 9, EndpointID: 0},
		&catalog.AppWebhookEndpointRemoved{AppID: 9, EndpointID: 30},
		&catalog.AppWebhookConfigured{AppID: 9},
	)
	after, _ := a.ByID(9)
	if ids := endpointIDs(after.WebhookEndpoints()); !slices.Equal(ids, []int64{31}) {
		t.Fatalf("endpoints %v: the removed one and the default without URL are gone", ids)
	}
	if e31, _ := after.Endpoint(31); e31.Secret != "w31b" || e31.PendingSecret != "" || e31.URL != "https://b.example/v2" || e31.Events != nil {
		t.Fatalf("endpoint 31 after activation and update %+v", e31)
	}
	if _, ok := after.Endpoint(0); ok || after.WebhookDisabled {
		t.Fatalf("default endpoint without a URL is not found, and it was enabled again: %+v", after)
	}
	// The copy handed out before is unchanged (copy on write).
	if e31, _ := before.Endpoint(31); e31.Secret != "w31" || len(before.Endpoints) != 2 {
		t.Fatalf("an earlier copy changed: %+v", before.Endpoints)
	}
	if _, ok := a.ByID(404); ok {
		t.Fatal("an endpoint of an unknown app made an app")
	}
	if _, ok := after.Endpoint(32); ok {
		t.Fatal("another app's endpoint is not this app's")
	}
}

func endpointIDs(eps []domain.Endpoint) []int64 {
	var out []int64
	for _, e := range eps {
		out = append(out, e.EndpointID)
	}
	return out
}
