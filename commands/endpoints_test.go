package commands

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the webhook endpoint decisions: the extra endpoints an app
// may have beside its default one.

var added = catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 21, URL: "https://b.example/hook", Events: []string{"health.report.*"}, SealedWebhookSecret: "e1"}

func TestAddEndpointDecision(t *testing.T) {
	got, err := one(decideAddEndpoint(app(t), 21, EndpointInput{URL: "https://b.example/hook", Events: []string{"health.report.*"}}, "e1"))
	then(t, got, err, added)

	// The default endpoint counts while it has a URL.
	full := []events.Payload{}
	for i := range domain.MaxEndpoints - 1 {
		full = append(full, catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: int64(30 + i), URL: fmt.Sprintf("https://b.example/%d", i)})
	}
	got, err = one(decideAddEndpoint(app(t, full...), 50, EndpointInput{URL: "https://b.example/x"}, "e"))
	thenError(t, got, err, domain.ErrTooManyEndpoints)
	got, err = one(decideAddEndpoint(app(t, append(full, catalog.AppWebhookConfigured{AppID: 9})...), 50, EndpointInput{URL: "https://b.example/x"}, "e"))
	then(t, got, err, catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 50, URL: "https://b.example/x", SealedWebhookSecret: "e"})
	// A removed endpoint frees its place.
	got, err = one(decideAddEndpoint(app(t, append(full, catalog.AppWebhookEndpointRemoved{AppID: 9, EndpointID: 30})...), 50, EndpointInput{URL: "https://b.example/x"}, "e"))
	then(t, got, err, catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 50, URL: "https://b.example/x", SealedWebhookSecret: "e"})

	got, err = one(decideAddEndpoint(given(t, &appState{}), 21, EndpointInput{URL: "https://b.example/hook"}, "e1"))
	thenError(t, got, err, domain.ErrAppNotFound)
}

func TestAddEndpointRejectsBadInput(t *testing.T) {
	refuse := func(_ context.Context, raw string) error {
		if raw == "https://10.0.0.1/hook" {
			return errors.New("is not a public address")
		}
		return nil
	}
	a := &Apps{checkURL: refuse}
	for field, in := range map[string]EndpointInput{
		"url":       {},
		"events[0]": {URL: "https://b.example/hook", Events: []string{"Order Shipped"}},
		"events":    {URL: "https://b.example/hook", Events: make([]string, 51)},
	} {
		t.Run(field, func(t *testing.T) { thenInvalid(t, a.validateEndpoint(ctx, in), field) })
	}
	thenInvalid(t, a.validateEndpoint(ctx, EndpointInput{URL: "https://10.0.0.1/hook"}), "url")
}

func TestUpdateEndpointDecision(t *testing.T) {
	got, err := one(decideUpdateEndpoint(app(t, added), 21, WebhookSettings{URL: domain.Val("https://b.example/v2")}))
	then(t, got, err, catalog.AppWebhookEndpointUpdated{AppID: 9, EndpointID: 21, URL: "https://b.example/v2", Events: []string{"health.report.*"}})
	got, err = one(decideUpdateEndpoint(app(t, added), 21, WebhookSettings{Events: domain.Val([]string(nil))}))
	then(t, got, err, catalog.AppWebhookEndpointUpdated{AppID: 9, EndpointID: 21, URL: "https://b.example/hook"})
	got, err = one(decideUpdateEndpoint(app(t, added), 21, WebhookSettings{URL: domain.Val("https://b.example/hook")}))
	then(t, got, err) // unchanged
	// The default endpoint keeps its own event.
	got, err = one(decideUpdateEndpoint(app(t), domain.DefaultEndpointID, WebhookSettings{URL: domain.Val("https://h.example/v2")}))
	then(t, got, err, catalog.AppWebhookConfigured{AppID: 9, WebhookURL: "https://h.example/v2", WebhookEvents: []string{"order.*"}})

	for name, st := range map[string]*appState{
		"never added":              app(t),
		"removed":                  app(t, added, catalog.AppWebhookEndpointRemoved{AppID: 9, EndpointID: 21}),
		"another app's endpoint":   app(t, catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 22, URL: "https://b.example/x"}),
		"default endpoint, no URL": given(t, &appState{}, catalog.AppCreated{AppID: 9, Name: "x"}),
	} {
		t.Run(name, func(t *testing.T) {
			id := int64(21)
			if name == "default endpoint, no URL" {
				id = domain.DefaultEndpointID
			}
			got, err := one(decideUpdateEndpoint(st, id, WebhookSettings{URL: domain.Val("https://b.example/v3")}))
			thenError(t, got, err, domain.ErrEndpointNotFound)
		})
	}
}

func TestEnableDisableRemoveEndpointDecisions(t *testing.T) {
	got, err := one(decideSetEndpointEnabled(app(t, added), 21, false))
	then(t, got, err, catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 21})
	disabled := app(t, added, catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 21})
	got, err = one(decideSetEndpointEnabled(disabled, 21, false))
	then(t, got, err) // disabled already
	got, err = one(decideSetEndpointEnabled(disabled, 21, true))
	then(t, got, err, catalog.AppWebhookEndpointEnabled{AppID: 9, EndpointID: 21})
	got, err = one(decideSetEndpointEnabled(app(t, added), 21, true))
	then(t, got, err) // enabled already

	// The default endpoint can be disabled too, with the endpoint events.
	got, err = one(decideSetEndpointEnabled(app(t), domain.DefaultEndpointID, false))
	then(t, got, err, catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 0})
	got, err = one(decideSetEndpointEnabled(app(t, catalog.AppWebhookEndpointDisabled{AppID: 9}), domain.DefaultEndpointID, true))
	then(t, got, err, catalog.AppWebhookEndpointEnabled{AppID: 9, EndpointID: 0})

	got, err = one(decideRemoveEndpoint(app(t, added), 21))
	then(t, got, err, catalog.AppWebhookEndpointRemoved{AppID: 9, EndpointID: 21})
	got, err = one(decideRemoveEndpoint(app(t, added, catalog.AppWebhookEndpointRemoved{AppID: 9, EndpointID: 21}), 21))
	thenError(t, got, err, domain.ErrEndpointNotFound)
	// Removing the default endpoint empties the app-level URL, as PATCH does.
	got, err = one(decideRemoveEndpoint(app(t), domain.DefaultEndpointID))
	then(t, got, err, catalog.AppWebhookConfigured{AppID: 9})
	got, err = one(decideSetEndpointEnabled(app(t), 21, false))
	thenError(t, got, err, domain.ErrEndpointNotFound)
}

func TestEndpointSecretDecisions(t *testing.T) {
	got, err := one(decideRotateEndpointSecret(app(t, added), 21, "e2"))
	then(t, got, err, catalog.AppWebhookEndpointSecretIssued{AppID: 9, EndpointID: 21, SealedPendingWebhookSecret: "e2"})
	pending := app(t, added, catalog.AppWebhookEndpointSecretIssued{AppID: 9, EndpointID: 21, SealedPendingWebhookSecret: "e2"})
	got, err = one(decideActivateEndpointSecret(pending, 21))
	then(t, got, err, catalog.AppWebhookEndpointSecretActivated{AppID: 9, EndpointID: 21})
	got, err = one(decideActivateEndpointSecret(app(t, added), 21))
	thenError(t, got, err, domain.ErrNoPendingWebhookSecret)
	// One endpoint's pending secret is not another's: the default endpoint has none.
	got, err = one(decideActivateEndpointSecret(pending, domain.DefaultEndpointID))
	thenError(t, got, err, domain.ErrNoPendingWebhookSecret)
	got, err = one(decideActivateEndpointSecret(app(t, added, catalog.AppWebhookSecretIssued{AppID: 9, SealedPendingWebhookSecret: "w2"}), 21))
	thenError(t, got, err, domain.ErrNoPendingWebhookSecret)

	// The default endpoint keeps the app-level events, so the webhook-secret routes and these agree.
	got, err = one(decideRotateEndpointSecret(app(t), domain.DefaultEndpointID, "w2"))
	then(t, got, err, catalog.AppWebhookSecretIssued{AppID: 9, SealedPendingWebhookSecret: "w2"})
	got, err = one(decideActivateEndpointSecret(app(t, catalog.AppWebhookSecretIssued{AppID: 9, SealedPendingWebhookSecret: "w2"}), domain.DefaultEndpointID))
	then(t, got, err, catalog.AppWebhookSecretActivated{AppID: 9})

	got, err = one(decideRotateEndpointSecret(app(t), 21, "e2"))
	thenError(t, got, err, domain.ErrEndpointNotFound)
}

func TestSendTestEventDecision(t *testing.T) {
	got, err := one(decideSendTestEvent(app(t, added), 21))
	then(t, got, err, catalog.AppWebhookTestRequested{AppID: 9, EndpointID: 21})
	got, err = one(decideSendTestEvent(app(t, added, catalog.AppWebhookTestRequested{AppID: 9, EndpointID: 21}), 21))
	then(t, got, err, catalog.AppWebhookTestRequested{AppID: 9, EndpointID: 21}) // every request is a new test
	got, err = one(decideSendTestEvent(app(t), domain.DefaultEndpointID))
	then(t, got, err, catalog.AppWebhookTestRequested{AppID: 9})
	got, err = one(decideSendTestEvent(app(t, added, catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 21}), 21))
	thenError(t, got, err, domain.ErrEndpointDisabled)
	got, err = one(decideSendTestEvent(app(t), 21))
	thenError(t, got, err, domain.ErrEndpointNotFound)
	got, err = one(decideSendTestEvent(given(t, &appState{}), 21))
	thenError(t, got, err, domain.ErrAppNotFound)
}
