package commands

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Given/When/Then of the developer side of an app's life: ownership and
// purpose at creation, the review request with a host mini-program, the
// plugin app id on approval, and the one-time production reveal.

func TestCreateAppRecordsDeveloperAndPurpose(t *testing.T) {
	c := newApp{ID: 9, App: CreateApp{Name: "Clinic", Environment: EnvSandbox, Scopes: []string{"orders"}, DeveloperID: 3, Purpose: "sync members"},
		AppKey: "ak_1", SealedAppSecret: "s1", SealedWebhookSecret: "w1"}
	want := catalog.AppCreated{AppID: 9, Name: "Clinic", AppKey: "ak_1", SealedAppSecret: "s1", SealedWebhookSecret: "w1",
		Environment: EnvSandbox, Scopes: []string{"orders"}, DeveloperID: 3, Purpose: "sync members"}
	then(t, decideCreateApp(c), nil, want)

	a := &Apps{}
	thenInvalid(t, a.validate(ctx, &CreateApp{Name: "a", DeveloperID: 3, Purpose: "  "}), "purpose")
	thenInvalid(t, a.validate(ctx, &CreateApp{Name: "a", Purpose: string(bytes.Repeat([]byte("p"), 501))}), "purpose")
	if err := a.validate(ctx, &CreateApp{Name: "operator app"}); err != nil {
		t.Fatalf("an operator's app needs no purpose: %v", err)
	}
}

func TestRequestReviewDecision(t *testing.T) {
	got, err := one(decideRequestReview(app(t), "wx0123456789abcdef"))
	then(t, got, err, catalog.AppReviewRequested{AppID: 9, HostAppID: "wx0123456789abcdef"})
	requested := catalog.AppReviewRequested{AppID: 9}
	got, err = one(decideRequestReview(app(t, requested), ""))
	then(t, got, err) // the same request again
	got, err = one(decideRequestReview(app(t, requested), "wx1"))
	then(t, got, err, catalog.AppReviewRequested{AppID: 9, HostAppID: "wx1"})
	// A rejected app asks again, and can then be reviewed again.
	rejected := app(t, requested, catalog.AppReviewed{AppID: 9, Notes: "no privacy policy"})
	got, err = one(decideRequestReview(rejected, ""))
	then(t, got, err, requested)
	again := app(t, requested, catalog.AppReviewed{AppID: 9}, requested)
	got, err = one(decideReviewApp(again, reviewApp{Approve: true, ProductionAppID: 10, PluginAppID: "plg0000000001"}))
	then(t, got, err, catalog.AppReviewed{AppID: 9, Approved: true, ProductionAppID: 10, PluginAppID: "plg0000000001"})

	prod := sandboxApp
	prod.Environment = EnvProduction
	for name, st := range map[string]*appState{
		"approved":   app(t, catalog.AppReviewed{AppID: 9, Approved: true, ProductionAppID: 10}),
		"production": given(t, &appState{}, prod),
	} {
		got, err := one(decideRequestReview(st, ""))
		if thenError(t, got, err, domain.ErrReviewNotRequestable); t.Failed() {
			t.Fatal(name)
		}
	}
	got, err = one(decideRequestReview(given(t, &appState{}), ""))
	thenError(t, got, err, domain.ErrAppNotFound)
}

func TestRevealProductionDecision(t *testing.T) {
	approved := catalog.AppReviewed{AppID: 9, Approved: true, ProductionAppID: 10}
	got, err := one(decideRevealProduction(app(t, approved), "s2", "w2"))
	then(t, got, err, catalog.AppProductionRevealed{AppID: 9, ProductionAppID: 10, SealedAppSecret: "s2", SealedWebhookSecret: "w2"})
	got, err = one(decideRevealProduction(app(t, approved, catalog.AppProductionRevealed{AppID: 9, ProductionAppID: 10}), "s3", "w3"))
	thenError(t, got, err, domain.ErrProductionRevealed)
	for _, st := range []*appState{app(t), app(t, catalog.AppReviewed{AppID: 9, Notes: "no"})} {
		got, err = one(decideRevealProduction(st, "s2", "w2"))
		thenError(t, got, err, domain.ErrAppNotApproved)
	}
}

// TestProductionRevealedOnceUnderConcurrency runs the developer's flow on
// a real store: request with a host mini-program, approval (plugin app id
// issued, developer carried to the production app), then eight concurrent
// reveals of which exactly one returns the credentials.
func TestProductionRevealedOnceUnderConcurrency(t *testing.T) {
	store, reg := memory.New(), catalog.Registry()
	sealer, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	apps := NewApps(store, reg, NewAllocator(store, reg, 10), sealer, nil)
	dev := Meta{Actor: "developer:3"}
	sb, err := apps.Create(ctx, CreateApp{Name: "Clinic", DeveloperID: 3, Purpose: "sync members"}, dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Review(ctx, sb.AppID, true, "", Meta{Actor: "operator:1"}); err != nil {
		// Without a request an operator may still review (the admin API).
		t.Fatal(err)
	}
	sb2, err := apps.Create(ctx, CreateApp{Name: "Host", DeveloperID: 3, Purpose: "measure"}, dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apps.RequestReview(ctx, sb2.AppID, "wx0123456789abcdef", dev); err != nil {
		t.Fatal(err)
	}
	prod, err := apps.Review(ctx, sb2.AppID, true, "ok", Meta{Actor: "operator:1"})
	if err != nil || prod.PluginAppID == "" || prod.AppID == sb2.AppID {
		t.Fatalf("approval %+v %v", prod, err)
	}
	var pst appState
	if _, _, err := apps.load(ctx, domain.AppStream(prod.AppID), pst.apply); err != nil || pst.developerID != 3 || pst.purpose != "measure" {
		t.Fatalf("production app %+v %v", pst, err)
	}

	var wg sync.WaitGroup
	results := make(chan error, 8)
	creds := make(chan Credentials, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := apps.RevealProduction(ctx, sb2.AppID, dev)
			results <- err
			if err == nil {
				creds <- c
			}
		}()
	}
	wg.Wait()
	close(results)
	close(creds)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, domain.ErrProductionRevealed):
			t.Fatalf("reveal: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d reveals succeeded", won)
	}
	c := <-creds
	if c.AppID != prod.AppID || c.AppKey != prod.AppKey || c.AppSecret == prod.AppSecret || c.AppSecret == "" || c.WebhookSecret == "" {
		t.Fatalf("revealed %+v, approval gave %+v", c, prod)
	}
}
