package privacy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// The admin delivery detail shows a webhook body's personal fields (a
// family group's name) and the receiver's answers redacted to every
// operator; only an auditor who gives a reason sees them, and the reveal is
// an audit fact naming the delivery and the person, recorded before the
// answer. A support operator asking to reveal is refused and appends
// nothing. The partner's own read is unchanged.
func TestAdminDeliveryRedactedUnlessRevealed(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		// A receiver that echoes what it was sent, as some do.
		echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body)
		}))
		t.Cleanup(echo.Close)
		p.ConfigureWebhook(a, echo.URL, "user.family_group.created")
		const groupName = "欧阳家 family"
		body := harness.RegisterBody("u-hooked")
		body["family_groups"] = []any{map[string]any{"app_group_id": 10, "name": groupName}}
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", body, http.StatusCreated, "0").Data(t, &reg)

		// The delivery, once attempted.
		var id string
		deadline := time.Now().Add(harness.WaitBound)
		for id == "" {
			var list struct {
				Deliveries []struct {
					ID       string `json:"delivery_id"`
					Event    string `json:"event"`
					Attempts int    `json:"attempts"`
				} `json:"deliveries"`
			}
			p.AdminOK("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d", a.ID), nil, 200).Data(t, &list)
			for _, d := range list.Deliveries {
				if d.Event == "user.family_group.created" && d.Attempts > 0 {
					id = d.ID
				}
			}
			if id == "" {
				if time.Now().After(deadline) {
					t.Fatalf("no attempted delivery: %+v", list)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		path := "/admin/v1/deliveries/" + id
		_, support := p.Operator("Sup", "support")
		auditorID, auditor := p.Operator("Aud", "auditor")
		type detail struct {
			Payload struct {
				Event string `json:"event"`
				Data  struct {
					Name          string `json:"name"`
					FamilyGroupID int64  `json:"family_group_id"`
				} `json:"data"`
			} `json:"payload"`
			Attempts []struct {
				ResponseExcerpt string `json:"response_excerpt"`
			} `json:"attempt_log"`
		}
		for _, tok := range []string{support, p.Node.AdminToken} {
			res := p.As(tok, "GET", path, nil)
			harness.ExpectCode(t, "redacted delivery", res, 200, "0")
			if strings.Contains(string(res.Raw), "欧阳家") {
				t.Fatalf("delivery shows the group's name without a reveal: %s", res.Raw)
			}
			var d detail
			res.Data(t, &d)
			if d.Payload.Event != "user.family_group.created" || d.Payload.Data.Name != "[redacted]" || d.Payload.Data.FamilyGroupID == 0 ||
				len(d.Attempts) == 0 || d.Attempts[0].ResponseExcerpt != "[redacted]" {
				t.Fatalf("redacted delivery: %s", res.Raw)
			}
		}
		// The partner reads its own delivery in clear.
		if res := a.Expect("GET", "/open/v1/webhooks/deliveries/"+id, nil, 200, "0"); !strings.Contains(string(res.Raw), groupName) {
			t.Fatalf("partner delivery detail: %s", res.Raw)
		}

		before := p.EventCount()
		harness.ExpectCode(t, "support reveals", p.As(support, "GET", path+"?reveal=true&reason=ticket+5", nil), 403, "ROLE_FORBIDDEN")
		harness.ExpectCode(t, "reveal without a reason", p.As(auditor, "GET", path+"?reveal=true", nil), 422, "VALIDATION_ERROR")
		harness.ExpectCode(t, "reveal=maybe", p.As(auditor, "GET", path+"?reveal=maybe&reason=x", nil), 422, "VALIDATION_ERROR")
		if n := p.EventCount(); n != before {
			t.Fatalf("refused reveals appended %d events", n-before)
		}
		res := p.As(auditor, "GET", path+"?reveal=true&reason=ticket+5", nil)
		harness.ExpectCode(t, "auditor reveals", res, 200, "0")
		var d detail
		res.Data(t, &d)
		if d.Payload.Data.Name != groupName || len(d.Attempts) == 0 || !strings.Contains(d.Attempts[0].ResponseExcerpt, "欧阳") {
			t.Fatalf("revealed delivery: %s", res.Raw)
		}
		facts := auditFacts(t, p, auditor, "action=reveal.delivery")
		// The person's app is named too, for its access log.
		want := []string{"delivery-" + id, fmt.Sprintf("user-%d", reg.OpenUserID), fmt.Sprintf("app-%d", a.ID)}
		if len(facts) != 1 || facts[0].Actor != fmt.Sprintf("operator:%d", auditorID) || facts[0].Reason != "ticket 5" ||
			strings.Join(facts[0].Subjects, ",") != strings.Join(want, ",") {
			t.Fatalf("reveal facts %+v, want one by operator:%d about %v", facts, auditorID, want)
		}
	})
}

// The admin provider listing shows each provider's contact (a person's
// name or phone) redacted to every role; an auditor reveals it with a
// reason, an audit fact naming the providers.
func TestAdminProvidersRedactedUnlessRevealed(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		station := p.CreateApp("station")
		var sp struct {
			ID int64 `json:"provider_id"`
		}
		const contact = "王小明 13912345678"
		station.Expect("POST", "/open/v1/service-providers", map[string]any{"name": "Station 1", "type": "HEALTH_STATION", "contact": contact, "points_code": "P-1"}, 201, "0").Data(t, &sp)
		_, support := p.Operator("Sup", "support")
		_, admin := p.Operator("Adm", "admin")
		auditorID, auditor := p.Operator("Aud", "auditor")
		type listing struct {
			Providers []struct {
				ID      int64  `json:"provider_id"`
				Name    string `json:"name"`
				Contact string `json:"contact"`
			} `json:"service_providers"`
		}
		for _, tok := range []string{support, admin, auditor} {
			res := p.As(tok, "GET", "/admin/v1/service-providers", nil)
			harness.ExpectCode(t, "providers", res, 200, "0")
			var l listing
			res.Data(t, &l)
			if strings.Contains(string(res.Raw), "13912345678") || len(l.Providers) != 1 || l.Providers[0].Contact != "[redacted]" || l.Providers[0].Name != "Station 1" {
				t.Fatalf("providers without a reveal: %s", res.Raw)
			}
		}
		before := p.EventCount()
		for _, tok := range []string{support, admin} {
			harness.ExpectCode(t, "reveal by a non-auditor", p.As(tok, "GET", "/admin/v1/service-providers?reveal=true&reason=check", nil), 403, "ROLE_FORBIDDEN")
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("refused reveals appended %d events", n-before)
		}
		res := p.As(auditor, "GET", "/admin/v1/service-providers?reveal=true", nil, "X-Audit-Reason", "licence check 9")
		harness.ExpectCode(t, "auditor reveals", res, 200, "0")
		var l listing
		res.Data(t, &l)
		if len(l.Providers) != 1 || l.Providers[0].Contact != contact {
			t.Fatalf("revealed providers: %s", res.Raw)
		}
		facts := auditFacts(t, p, auditor, "action=reveal.providers")
		if len(facts) != 1 || facts[0].Actor != fmt.Sprintf("operator:%d", auditorID) || facts[0].Reason != "licence check 9" ||
			len(facts[0].Subjects) != 1 || facts[0].Subjects[0] != fmt.Sprintf("provider-%d", sp.ID) {
			t.Fatalf("reveal facts %+v", facts)
		}
	})
}

// auditFacts lists the audit facts the query selects, as the auditor tok.
func auditFacts(t *testing.T, p *harness.Platform, tok, query string) []harness.AuditFact {
	t.Helper()
	res := p.As(tok, "GET", "/admin/v1/audit?"+query, nil)
	harness.ExpectCode(t, "audit "+query, res, 200, "0")
	var page struct {
		Facts []harness.AuditFact `json:"facts"`
	}
	if err := json.Unmarshal(res.Env.Data, &page); err != nil {
		t.Fatal(err)
	}
	return page.Facts
}
