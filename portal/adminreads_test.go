package portal_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// adminGet reads an admin route with token, every answer validated against
// the OpenAPI document; it returns the status, the envelope's code and data.
func adminGet(t *testing.T, p *portaltest.Platform, token, path string) (int, string, json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.Srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Transport: openapitest.NewTransport(t, p.Srv.Client().Transport), Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Code any             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("GET %s: %d %s: %v", path, res.StatusCode, raw, err)
	}
	return res.StatusCode, fmt.Sprint(env.Code), env.Data
}

// outboxMail is a message as GET /admin/v1/outbox lists it.
type outboxMail struct {
	MailID      int64  `json:"mail_id"`
	DeveloperID int64  `json:"developer_id"`
	To          string `json:"to"`
	Subject     string `json:"subject"`
	Body        string `json:"body"`
	Status      string `json:"status"`
}

// TestOutboxThroughTheAdminAPI: the reset mail an outbox-only node keeps
// is listed by GET /admin/v1/outbox (what platformctl outbox prints), with
// its link, newest first, filtered by status; only admins may read it.
func TestOutboxThroughTheAdminAPI(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		if status, code, data := adminGet(t, p, p.Node.AdminToken, "/admin/v1/outbox"); status != http.StatusOK || string(data) != `{"mails":[]}` {
			t.Fatalf("empty outbox: %d %s %s", status, code, data)
		}
		first, second := portaltest.Email(t, "Ann"), portaltest.Email(t, "Bob")
		_, firstID := p.Developer(first, false)
		_, secondID := p.Developer(second, false)
		b := p.Browser()
		b.Get("/portal/password/forgot")
		for _, email := range []string{first, second} {
			if got := b.Post("/portal/password/forgot", url.Values{"email": {email}}); got.Status != http.StatusOK {
				t.Fatalf("forgot %s: %d", email, got.Status)
			}
		}
		// The outbox is a projection, and reset mail is background work:
		// wait (bounded) for both messages after the two welcome mails.
		var mails []outboxMail
		for i := 0; i < 200 && len(mails) < 4; i++ {
			if i > 0 {
				time.Sleep(25 * time.Millisecond)
			}
			status, code, data := adminGet(t, p, p.Node.AdminToken, "/admin/v1/outbox")
			var page struct{ Mails []outboxMail }
			if status != http.StatusOK || json.Unmarshal(data, &page) != nil {
				t.Fatalf("outbox: %d %s %s", status, code, data)
			}
			mails = page.Mails
		}
		if len(mails) != 4 || mails[2].To != second || mails[3].To != first || mails[3].Subject != "Your developer portal account" {
			t.Fatalf("outbox has %d mails, want 2 resets after 2 welcomes: %+v", len(mails), mails)
		}
		mails = mails[:2]
		// Newest first: the second request's mail leads.
		if mails[0].To != second || mails[0].DeveloperID != secondID || mails[1].To != first || mails[1].DeveloperID != firstID ||
			mails[0].MailID <= mails[1].MailID {
			t.Fatalf("order or recipients: %+v", mails)
		}
		for _, m := range mails {
			if m.Status != "queued" || !resetLink.MatchString(m.Body) || !strings.Contains(strings.ToLower(m.Subject), "password") {
				t.Fatalf("mail: %+v", m)
			}
		}
		// The link works: it is the one the operator page shows.
		op := p.Operator()
		if tok := resetToken(t, op, second); !strings.Contains(mails[0].Body, url.QueryEscape(tok)) && !strings.Contains(mails[0].Body, tok) {
			t.Fatalf("the API's body has another link than the page's: %s", mails[0].Body)
		}
		if status, _, data := adminGet(t, p, p.Node.AdminToken, "/admin/v1/outbox?status=sent"); status != http.StatusOK || string(data) != `{"mails":[]}` {
			t.Fatalf("sent only: %d %s", status, data)
		}
		if status, code, data := adminGet(t, p, p.Node.AdminToken, "/admin/v1/outbox?status=lost"); status != http.StatusUnprocessableEntity || code != "VALIDATION_ERROR" {
			t.Fatalf("unknown status: %d %s %s", status, code, data)
		}
		for _, role := range []string{"support", "auditor"} {
			o, err := operatorsCreate(p, "Reader "+role, role)
			if err != nil {
				t.Fatal(err)
			}
			if status, code, _ := adminGet(t, p, o.Token, "/admin/v1/outbox"); status != http.StatusForbidden || code != "ROLE_FORBIDDEN" {
				t.Fatalf("%s reads the outbox: %d %s", role, status, code)
			}
		}
	})
}

// TestAdminAppReadsShowDeveloperAndPurpose: an app a developer created in
// the portal says whose it is and its purpose in GET /admin/v1/apps and
// /admin/v1/apps/{id}; an operator's app has neither field.
func TestAdminAppReadsShowDeveloperAndPurpose(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	b, devID := p.Developer(portaltest.Email(t, "Cleo"), true)
	c := createApp(t, b, "Clinic", "orders")
	status, data, err := admin(p, "POST", "/admin/v1/apps", map[string]any{"name": "Operator's", "scopes": []string{"orders"}})
	var opApp struct {
		AppID int64 `json:"app_id"`
	}
	if err != nil || status != http.StatusCreated || json.Unmarshal(data, &opApp) != nil {
		t.Fatalf("operator's app: %d %s %v", status, data, err)
	}

	type appRead struct {
		AppID       int64   `json:"app_id"`
		DeveloperID *int64  `json:"developer_id"`
		Purpose     *string `json:"purpose"`
	}
	var one appRead
	if status, code, data := adminGet(t, p, p.Node.AdminToken, fmt.Sprintf("/admin/v1/apps/%d", c.AppID)); status != http.StatusOK || json.Unmarshal(data, &one) != nil ||
		one.DeveloperID == nil || *one.DeveloperID != devID || one.Purpose == nil || *one.Purpose != "Sync our members' reports" {
		t.Fatalf("developer's app: %d %s %s", status, code, data)
	}
	if status, code, data := adminGet(t, p, p.Node.AdminToken, fmt.Sprintf("/admin/v1/apps/%d", opApp.AppID)); status != http.StatusOK ||
		strings.Contains(string(data), "developer_id") || strings.Contains(string(data), "purpose") {
		t.Fatalf("operator's app: %d %s %s", status, code, data)
	}
	var list struct{ Apps []appRead }
	status, code, data := adminGet(t, p, p.Node.AdminToken, "/admin/v1/apps")
	if status != http.StatusOK || json.Unmarshal(data, &list) != nil {
		t.Fatalf("list: %d %s %s", status, code, data)
	}
	seen := 0
	for _, a := range list.Apps {
		switch a.AppID {
		case c.AppID:
			if a.DeveloperID == nil || *a.DeveloperID != devID || a.Purpose == nil || *a.Purpose != "Sync our members' reports" {
				t.Fatalf("developer's app in the list: %s", data)
			}
			seen++
		case opApp.AppID:
			if a.DeveloperID != nil || a.Purpose != nil {
				t.Fatalf("operator's app in the list: %s", data)
			}
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("list lacks an app: %s", data)
	}
}
