package portal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// admin calls the admin API with the bootstrap token and decodes data.
func adminCall(t *testing.T, p *portaltest.Platform, method, path string, body, into any) int {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, p.Srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if into != nil {
		env := struct{ Data any }{Data: into}
		if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return res.StatusCode
}

var providerLink = regexp.MustCompile(`^/portal/providers/(\d+)$`)

// register submits the provider form and returns the new provider's id.
func register(t *testing.T, b *portaltest.Browser, form url.Values) int64 {
	t.Helper()
	b.Get("/portal/providers")
	got := b.Post("/portal/providers", form)
	m := providerLink.FindStringSubmatch(got.Location())
	if got.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("register provider: %d %s %s", got.Status, got.Location(), got.Text())
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

func TestServiceProvidersInThePortal(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		alice, aliceID := p.Developer(portaltest.Email(t, "alice"), true)
		bob, _ := p.Developer(portaltest.Email(t, "bob"), true)

		// Without an app there is nothing to register for.
		if got := alice.Get("/portal/providers"); got.Status != http.StatusOK || got.H1() != "Service providers" ||
			!strings.Contains(got.Text(), "Create an application first") {
			t.Fatalf("providers without apps: %d %s", got.Status, got.Text())
		}
		app := createApp(t, alice, "Station app", "benefits")
		bobs := createApp(t, bob, "Bob's app", "benefits")

		// Refusals append nothing: another developer's app, missing fields.
		before := eventCount(t, p)
		for name, f := range map[string]url.Values{
			"another developer's app": {"name": {"Station"}, "type": {"SERVICE_PROVIDER"}, "contact": {"ops@example.com"}, "app_id": {strconv.FormatInt(bobs.AppID, 10)}},
			"no name":                 {"type": {"SERVICE_PROVIDER"}, "contact": {"ops@example.com"}, "app_id": {strconv.FormatInt(app.AppID, 10)}},
			"station without points":  {"name": {"Station"}, "type": {"HEALTH_STATION"}, "contact": {"ops@example.com"}, "app_id": {strconv.FormatInt(app.AppID, 10)}},
		} {
			alice.Get("/portal/providers")
			if got := alice.Post("/portal/providers", f); got.Status != http.StatusBadRequest || got.H1() != "Service providers" {
				t.Fatalf("%s: %d %s", name, got.Status, got.Text())
			}
		}
		if n := eventCount(t, p); n != before {
			t.Fatalf("refused registrations appended %d events", n-before)
		}

		id := register(t, alice, url.Values{"name": {"Sunrise Health Station"}, "type": {"HEALTH_STATION"}, "contact": {"Li, 13900139000"},
			"points_code": {"PC-7"}, "app_id": {strconv.FormatInt(app.AppID, 10)}})
		page := alice.Get(fmt.Sprintf("/portal/providers/%d", id))
		if page.Status != http.StatusOK || !strings.Contains(page.Text(), "PENDING_REVIEW") || !strings.Contains(page.Text(), "usually within 3 business days") {
			t.Fatalf("provider page: %d %s", page.Status, page.Text())
		}
		other := register(t, alice, url.Values{"name": {"Night Clinic"}, "type": {"SERVICE_PROVIDER"}, "contact": {"night@example.com"},
			"app_id": {strconv.FormatInt(app.AppID, 10)}})

		// Another developer: the same 404 as a missing provider, and not listed.
		missing := bob.Get("/portal/providers/999999999")
		for _, path := range []string{fmt.Sprintf("/portal/providers/%d", id), "/portal/providers/abc"} {
			if got := bob.Get(path); got.Status != http.StatusNotFound || got.Text() != missing.Text() {
				t.Fatalf("%s by another developer: %d %s", path, got.Status, got.Text())
			}
		}
		if got := bob.Get("/portal/providers"); strings.Contains(got.Text(), "Sunrise") {
			t.Fatal("another developer's provider is listed")
		}

		// The operator approves one, rejects the other with a reason, and
		// sets the allowed items of the approved one.
		var item1, item2 struct {
			ID int64 `json:"benefit_item_id"`
		}
		if adminCall(t, p, "POST", "/admin/v1/benefit-items", map[string]any{"name": "Annual check-up"}, &item1) != http.StatusCreated ||
			adminCall(t, p, "POST", "/admin/v1/benefit-items", map[string]any{"name": "Dental cleaning"}, &item2) != http.StatusCreated {
			t.Fatal("benefit items")
		}
		ops := p.Operator()
		queue := ops.Get("/portal/ops/providers")
		if queue.Status != http.StatusOK || queue.H1() != "Service provider review" || !strings.Contains(queue.Body, fmt.Sprintf(`id="provider-%d"`, id)) {
			t.Fatalf("operator providers: %d %s", queue.Status, queue.Text())
		}
		// The contact is a person's name and phone: redacted for operators.
		if strings.Contains(queue.Body, "13900139000") || strings.Contains(queue.Body, "night@example.com") || !strings.Contains(queue.Body, "[redacted]") {
			t.Fatalf("operator providers page shows a contact in clear: %s", queue.Text())
		}
		if got := ops.Post(fmt.Sprintf("/portal/ops/providers/%d/review", id), url.Values{"decision": {"approve"}, "reason": {"licence checked"}}); got.Status != http.StatusSeeOther {
			t.Fatalf("approve: %d %s", got.Status, got.Text())
		}
		if got := ops.Post(fmt.Sprintf("/portal/ops/providers/%d/review", id), url.Values{"decision": {"reject"}}); got.Status != http.StatusConflict {
			t.Fatalf("second review: %d", got.Status)
		}
		if got := ops.Post(fmt.Sprintf("/portal/ops/providers/%d/review", other), url.Values{"decision": {"reject"}, "reason": {"no licence on file"}}); got.Status != http.StatusSeeOther {
			t.Fatalf("reject: %d %s", got.Status, got.Text())
		}
		ops.Get("/portal/ops/providers")
		if got := ops.Post(fmt.Sprintf("/portal/ops/providers/%d/items", id), url.Values{"allowed_benefit_item_ids": {strconv.FormatInt(item2.ID, 10)}}); got.Status != http.StatusSeeOther {
			t.Fatalf("items: %d %s", got.Status, got.Text())
		}
		if got := ops.Post(fmt.Sprintf("/portal/ops/providers/%d/items", id), url.Values{"allowed_benefit_item_ids": {"987654321"}}); got.Status != http.StatusBadRequest {
			t.Fatalf("unknown item: %d %s", got.Status, got.Text())
		}
		if queue := ops.Get("/portal/ops/providers"); !strings.Contains(queue.Body, fmt.Sprintf(`<option value="%d" selected>`, item2.ID)) ||
			strings.Contains(queue.Body, fmt.Sprintf(`<option value="%d" selected>`, item1.ID)) {
			t.Fatalf("allowed items on the operator page: %s", queue.Body)
		}

		// What the developer sees, and what the admin API holds.
		page = alice.Get(fmt.Sprintf("/portal/providers/%d", id))
		if !strings.Contains(page.Text(), "APPROVED") || !strings.Contains(page.Text(), "Dental cleaning") || strings.Contains(page.Text(), "Annual check-up") {
			t.Fatalf("approved provider page: %s", page.Text())
		}
		if page := alice.Get(fmt.Sprintf("/portal/providers/%d", other)); !strings.Contains(page.Text(), "REJECTED") || !strings.Contains(page.Text(), "no licence on file") {
			t.Fatalf("rejected provider page: %s", page.Text())
		}
		var listed struct {
			Providers []struct {
				ID      int64   `json:"provider_id"`
				AppID   int64   `json:"app_id"`
				Status  string  `json:"status"`
				Allowed []int64 `json:"allowed_benefit_item_ids"`
			} `json:"service_providers"`
		}
		adminCall(t, p, "GET", "/admin/v1/service-providers", nil, &listed)
		found := false
		for _, sp := range listed.Providers {
			if sp.ID == id {
				found = sp.AppID == app.AppID && sp.Status == "APPROVED" && len(sp.Allowed) == 1 && sp.Allowed[0] == item2.ID
			}
		}
		if !found {
			t.Fatalf("admin API providers: %+v", listed)
		}

		dev := fmt.Sprintf("developer:%d", aliceID)
		got := actorsOf(t, p, domain.ProviderStream(id))
		want := []string{"provider.registered by " + dev, "provider.reviewed by operator:", "provider.items_configured by operator:"}
		if len(got) != len(want) {
			t.Fatalf("provider history %v", got)
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Fatalf("provider history %v, want %v", got, want)
			}
		}
	})
}

// TestOperatorRolesInReviews: a support operator may read the review
// pages but not decide, exactly as on the admin API.
func TestOperatorRolesInReviews(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	dev, _ := p.Developer(portaltest.Email(t, "roles"), true)
	app := createApp(t, dev, "Clinic", "orders")
	dev.Post(fmt.Sprintf("/portal/apps/%d/review", app.AppID), nil)
	provider := register(t, dev, url.Values{"name": {"Clinic"}, "type": {"SERVICE_PROVIDER"}, "contact": {"c@example.com"}, "app_id": {strconv.FormatInt(app.AppID, 10)}})
	var op struct {
		Token string `json:"token"`
	}
	if adminCall(t, p, "POST", "/admin/v1/operators", map[string]any{"name": "Sam", "role": "support"}, &op) != http.StatusCreated {
		t.Fatal("support operator")
	}
	support := p.Browser()
	support.SignInOperator(op.Token)
	if got := support.Get("/portal/ops/apps"); got.Status != http.StatusOK || !strings.Contains(got.Body, fmt.Sprintf(`id="app-%d"`, app.AppID)) {
		t.Fatalf("support reads the queue: %d", got.Status)
	}
	before := eventCount(t, p)
	for _, c := range []struct{ path, field, value string }{
		{fmt.Sprintf("/portal/ops/apps/%d/review", app.AppID), "decision", "approve"},
		{fmt.Sprintf("/portal/ops/providers/%d/review", provider), "decision", "approve"},
		{fmt.Sprintf("/portal/ops/providers/%d/items", provider), "allowed_benefit_item_ids", "1"},
	} {
		support.Get("/portal/ops/providers")
		if got := support.Post(c.path, url.Values{c.field: {c.value}}); got.Status != http.StatusForbidden ||
			!strings.Contains(got.Text(), "Your operator role does not allow this") {
			t.Fatalf("support POST %s: %d %s", c.path, got.Status, got.Text())
		}
	}
	if n := eventCount(t, p); n != before {
		t.Fatalf("refused decisions appended %d events", n-before)
	}
	if got := dev.Get("/portal/ops/apps"); got.Status == http.StatusOK {
		t.Fatal("a developer reached the operators' page")
	}
}

func TestProviderFormsRefuseWithoutCSRF(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	dev, _ := p.Developer(portaltest.Email(t, "pcsrf"), true)
	app := createApp(t, dev, "Clinic", "orders")
	provider := register(t, dev, url.Values{"name": {"Clinic"}, "type": {"SERVICE_PROVIDER"}, "contact": {"c@example.com"}, "app_id": {strconv.FormatInt(app.AppID, 10)}})
	ops := p.Operator()
	ops.Get("/portal/ops/providers")
	before := eventCount(t, p)
	for _, c := range []struct {
		b    *portaltest.Browser
		path string
		form url.Values
	}{
		{dev, "/portal/providers", url.Values{"name": {"x"}, "type": {"SERVICE_PROVIDER"}, "contact": {"c"}, "app_id": {strconv.FormatInt(app.AppID, 10)}}},
		{ops, fmt.Sprintf("/portal/ops/providers/%d/review", provider), url.Values{"decision": {"approve"}}},
		{ops, fmt.Sprintf("/portal/ops/providers/%d/items", provider), url.Values{}},
	} {
		for _, token := range []string{"", "forged-" + c.b.CSRF} {
			f := url.Values{}
			for k, v := range c.form {
				f[k] = v
			}
			if token != "" {
				f.Set("csrf_token", token)
			}
			if got := c.b.PostRaw(c.path, f); got.Status != http.StatusForbidden {
				t.Fatalf("POST %s with token %q: %d", c.path, token, got.Status)
			}
		}
	}
	if n := eventCount(t, p); n != before {
		t.Fatalf("refused forms appended %d events", n-before)
	}
}
