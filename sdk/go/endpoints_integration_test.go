package partneropen

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestWebhookEndpointsAgainstThePlatform manages endpoints through the SDK
// against a real platform process: the default endpoint is listed; an
// added endpoint's test event verifies with that endpoint's secret only;
// rotation and activation move the signature to the new secret; a deleted
// endpoint is an APIError WEBHOOK_ENDPOINT_NOT_FOUND.
func TestWebhookEndpointsAgainstThePlatform(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startPlatform(t)
	ctx := context.Background()
	def := newReceiver(t)
	app, c := p.newApp("sdk endpoints", def.srv.URL+"/hooks")
	def.mu.Lock()
	def.secrets = []string{app.WebhookSecret}
	def.mu.Unlock()

	list, err := c.ListWebhookEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Endpoints) != 1 || list.Endpoints[0].EndpointID != DefaultEndpointID || list.Endpoints[0].SigningSecret != "app_webhook_secret" {
		t.Fatalf("endpoints %+v", list)
	}

	own := newReceiver(t)
	created, err := c.CreateWebhookEndpoint(ctx, WebhookEndpointCreate{URL: own.srv.URL + "/own", Events: []string{"user.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.WebhookSecret, "whsec_") || created.WebhookSecret == app.WebhookSecret {
		t.Fatalf("created %+v", created)
	}
	own.mu.Lock()
	own.secrets = []string{created.WebhookSecret}
	own.mu.Unlock()
	if _, err := c.SendWebhookEndpointTest(ctx, created.EndpointID); err != nil {
		t.Fatal(err)
	}
	ev := own.await(t, "webhook.test", func(e *Event) bool { return e.Test != nil })
	if ev.Test.EndpointID != created.EndpointID {
		t.Fatalf("test event for endpoint %d", ev.Test.EndpointID)
	}

	// Rotate, then activate: after activation only the new secret verifies.
	rotated, err := c.RotateWebhookEndpointSecret(ctx, created.EndpointID)
	if err != nil {
		t.Fatal(err)
	}
	if !rotated.PendingSecret || rotated.PendingWebhookSecret == "" {
		t.Fatalf("rotated %+v", rotated)
	}
	if _, err := c.ActivateWebhookEndpointSecret(ctx, created.EndpointID); err != nil {
		t.Fatal(err)
	}
	fresh := newReceiver(t)
	fresh.secrets = []string{rotated.PendingWebhookSecret}
	if _, err := c.UpdateWebhookEndpoint(ctx, created.EndpointID, WebhookEndpointUpdate{URL: fresh.srv.URL + "/fresh"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendWebhookEndpointTest(ctx, created.EndpointID); err != nil {
		t.Fatal(err)
	}
	fresh.await(t, "webhook.test after activation", func(e *Event) bool { return e.Test != nil })

	// Disabled, then deleted.
	off := false
	got, err := c.UpdateWebhookEndpoint(ctx, created.EndpointID, WebhookEndpointUpdate{Enabled: &off}, ClearFields("events"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled || len(got.Events) != 0 {
		t.Fatalf("after update %+v", got)
	}
	if err := c.DeleteWebhookEndpoint(ctx, created.EndpointID); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetWebhookEndpoint(ctx, created.EndpointID)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "WEBHOOK_ENDPOINT_NOT_FOUND" || apiErr.Status != 404 {
		t.Fatalf("deleted endpoint read: %v", err)
	}
}
