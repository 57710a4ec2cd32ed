package commands

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the app decisions (onboarding review, webhook
// settings and secrets, scopes, suspension).

var sandboxApp = catalog.AppCreated{AppID: 9, Name: "Clinic", AppKey: "ak_1", SealedAppSecret: "s1", SealedWebhookSecret: "w1",
	WebhookURL: "https://h.example/hook", WebhookEvents: []string{"order.*"}, Environment: EnvSandbox, Scopes: []string{"orders"}}

func app(t *testing.T, more ...events.Payload) *appState {
	return given(t, &appState{}, append([]events.Payload{sandboxApp}, more...)...)
}

// one wraps a single-event decision for then/thenError.
func one(ev events.Payload, err error) ([]events.Payload, error) {
	if ev == nil {
		return nil, err
	}
	return []events.Payload{ev}, err
}

func TestCreateAppDecision(t *testing.T) {
	c := newApp{ID: 9, App: CreateApp{Name: "Clinic", WebhookURL: "https://h.example/hook", WebhookEvents: []string{"order.*"}, Environment: EnvSandbox, Scopes: []string{"orders"}},
		AppKey: "ak_1", SealedAppSecret: "s1", SealedWebhookSecret: "w1"}
	then(t, decideCreateApp(c), nil, sandboxApp)
	c.SandboxAppID = 4
	want := sandboxApp
	want.SandboxAppID = 4
	then(t, decideCreateApp(c), nil, want)
}

func TestCreateAppRejectsBadInput(t *testing.T) {
	refuse := func(context.Context, string) error { return errors.New("is not a public address") }
	a := &Apps{checkURL: refuse}
	for field, c := range map[string]CreateApp{
		"name":              {},
		"environment":       {Name: "a", Environment: "staging"},
		"webhook_url":       {Name: "a", WebhookURL: "https://10.0.0.1/hook"},
		"webhook_events[0]": {Name: "a", WebhookEvents: []string{"Order Shipped"}},
		"scopes[0]":         {Name: "a", Scopes: []string{"everything"}},
	} {
		t.Run(field, func(t *testing.T) { thenInvalid(t, a.validate(ctx, &c), field) })
	}
}

func TestReviewAppDecision(t *testing.T) {
	got, err := one(decideReviewApp(app(t), reviewApp{Approve: true, Notes: "ok", ProductionAppID: 10}))
	then(t, got, err, catalog.AppReviewed{AppID: 9, Approved: true, Notes: "ok", ProductionAppID: 10})
	got, err = one(decideReviewApp(app(t), reviewApp{Notes: "incomplete"}))
	then(t, got, err, catalog.AppReviewed{AppID: 9, Notes: "incomplete"})

	prod := sandboxApp
	prod.Environment = EnvProduction
	for name, st := range map[string]*appState{
		"approved before":  app(t, catalog.AppReviewed{AppID: 9, Approved: true, ProductionAppID: 10}),
		"rejected before":  app(t, catalog.AppReviewed{AppID: 9}),
		"a production app": given(t, &appState{}, prod),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := one(decideReviewApp(st, reviewApp{Approve: true, ProductionAppID: 10}))
			thenError(t, got, err, domain.ErrAppReviewed)
		})
	}
	got, err = one(decideReviewApp(given(t, &appState{}), reviewApp{Approve: true}))
	thenError(t, got, err, domain.ErrAppNotFound)
}

func TestConfigureWebhookDecision(t *testing.T) {
	got, err := one(decideConfigureWebhook(app(t), WebhookSettings{URL: domain.Val("https://h.example/v2")}))
	then(t, got, err, catalog.AppWebhookConfigured{AppID: 9, WebhookURL: "https://h.example/v2", WebhookEvents: []string{"order.*"}})
	got, err = one(decideConfigureWebhook(app(t), WebhookSettings{URL: domain.Val(""), Events: domain.Val([]string{"health.report.*"})}))
	then(t, got, err, catalog.AppWebhookConfigured{AppID: 9, WebhookURL: "", WebhookEvents: []string{"health.report.*"}})
	got, err = one(decideConfigureWebhook(app(t), WebhookSettings{URL: domain.Val("https://h.example/hook")}))
	then(t, got, err) // unchanged
	got, err = one(decideConfigureWebhook(given(t, &appState{}), WebhookSettings{URL: domain.Val("https://x.example")}))
	thenError(t, got, err, domain.ErrAppNotFound)
}

func TestAppSecretDecisions(t *testing.T) {
	got, err := one(decideRotateSecret(app(t), "s2"))
	then(t, got, err, catalog.AppSecretRotated{AppID: 9, SealedAppSecret: "s2"})
	got, err = one(decideRotateSecret(given(t, &appState{}), "s2"))
	thenError(t, got, err, domain.ErrAppNotFound)

	got, err = one(decideRotateWebhookSecret(app(t), "w2"))
	then(t, got, err, catalog.AppWebhookSecretIssued{AppID: 9, SealedPendingWebhookSecret: "w2"})
	got, err = one(decideActivateWebhookSecret(app(t, catalog.AppWebhookSecretIssued{AppID: 9, SealedPendingWebhookSecret: "w2"})))
	then(t, got, err, catalog.AppWebhookSecretActivated{AppID: 9})

	got, err = one(decideActivateWebhookSecret(app(t)))
	thenError(t, got, err, domain.ErrNoPendingWebhookSecret)
	got, err = one(decideActivateWebhookSecret(app(t, catalog.AppWebhookSecretIssued{AppID: 9}, catalog.AppWebhookSecretActivated{AppID: 9})))
	thenError(t, got, err, domain.ErrNoPendingWebhookSecret) // activated already
	got, err = one(decideRotateWebhookSecret(given(t, &appState{}), "w2"))
	thenError(t, got, err, domain.ErrAppNotFound)
}

func TestScopesAndSuspensionDecisions(t *testing.T) {
	got, err := one(decideDeclareScopes(app(t), grantedScopes([]string{"orders", "channel_users", "orders"})))
	then(t, got, err, catalog.AppScopesDeclared{AppID: 9, Scopes: []string{"channel_users", "orders"}})
	got, err = one(decideDeclareScopes(app(t), []string{"orders"}))
	then(t, got, err) // the same grant

	got, err = one(decideSuspend(app(t), "abuse"))
	then(t, got, err, catalog.AppSuspended{AppID: 9, Reason: "abuse"})
	suspended := app(t, catalog.AppSuspended{AppID: 9, Reason: "abuse"})
	got, err = one(decideSuspend(suspended, "again"))
	then(t, got, err) // the first reason stands
	got, err = one(decideResume(suspended))
	then(t, got, err, catalog.AppResumed{AppID: 9})
	got, err = one(decideResume(app(t)))
	then(t, got, err)

	for name, decide := range map[string]func(*appState) (events.Payload, error){
		"scopes":  func(st *appState) (events.Payload, error) { return decideDeclareScopes(st, []string{"orders"}) },
		"suspend": func(st *appState) (events.Payload, error) { return decideSuspend(st, "x") },
		"resume":  decideResume,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := one(decide(given(t, &appState{})))
			thenError(t, got, err, domain.ErrAppNotFound)
		})
	}
}
