package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// A named operator's token is created once, used with its role's rights,
// named as the actor of its writes, and refused (401) once revoked; bad
// input to the operator routes gets its documented code and appends nothing.
func TestOperatorTokenLifecycle(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	before := p.EventCount()
	for _, c := range []struct {
		body       any
		status     int
		code, path string
	}{
		{map[string]any{}, 422, "VALIDATION_ERROR", "name"},
		{map[string]any{"name": "ann", "role": "root"}, 422, "VALIDATION_ERROR", "role"},
		{map[string]any{"name": "  ", "role": "admin"}, 422, "VALIDATION_ERROR", "name"},
		{map[string]any{"name": strings.Repeat("a", 65), "role": "admin"}, 422, "VALIDATION_ERROR", "name"},
		{map[string]any{"name": 7, "role": "admin"}, 422, "VALIDATION_ERROR", "name"},
		{"{", 400, "HTTP_400", ""},
	} {
		res := p.Admin("POST", "/admin/v1/operators", c.body)
		harness.ExpectCode(t, fmt.Sprint(c.body), res, c.status, c.code)
		if c.path != "" && len(res.Env.Errors[c.path]) == 0 {
			t.Errorf("%v: errors %v, want one on %s", c.body, res.Env.Errors, c.path)
		}
	}
	harness.ExpectCode(t, "revoke unknown", p.Admin("POST", "/admin/v1/operators/999/revoke", nil), 404, "OPERATOR_NOT_FOUND")
	harness.ExpectCode(t, "revoke bad id", p.Admin("POST", "/admin/v1/operators/abc/revoke", nil), 422, "VALIDATION_ERROR")
	if n := p.EventCount(); n != before {
		t.Fatalf("bad operator input appended %d events", n-before)
	}

	adminID, adminTok := p.Operator("Ann Admin", "admin")
	supportID, supportTok := p.Operator("Sam Support", "support")
	if !regexp.MustCompile(`^opr_[0-9a-f]{48}$`).MatchString(supportTok) {
		t.Fatalf("token %q", supportTok)
	}
	// Only the token's hash is in the log.
	var page struct {
		Events []struct {
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	p.Admin("GET", "/admin/v1/events?limit=10000", nil).Data(t, &page)
	for _, e := range page.Events {
		if strings.Contains(string(e.Data), supportTok) || strings.Contains(string(e.Data), adminTok) {
			t.Fatalf("an operator token is in the log: %s", e.Data)
		}
	}
	var list struct {
		Operators []map[string]any `json:"operators"`
	}
	p.Admin("GET", "/admin/v1/operators", nil).Data(t, &list)
	if len(list.Operators) != 2 || list.Operators[1]["role"] != "support" || list.Operators[1]["token"] != nil {
		t.Fatalf("operators %+v", list.Operators)
	}

	// The bootstrap token and a named admin are the actors of their writes.
	a := p.CreateApp("by-bootstrap")
	if got := p.LastActor(fmt.Sprintf("app-%d", a.ID)); got != "operator:bootstrap" {
		t.Errorf("bootstrap actor %q", got)
	}
	res := p.As(adminTok, "POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "test"})
	if res.Status != http.StatusOK {
		t.Fatalf("suspend by a named admin: %d %s", res.Status, res.Raw)
	}
	if got := p.LastActor(fmt.Sprintf("app-%d", a.ID)); got != fmt.Sprintf("operator:%d", adminID) {
		t.Errorf("named admin's actor %q", got)
	}

	// Support reads and rebuilds, but neither manages apps nor operators nor lists the audit.
	before = p.EventCount()
	harness.ExpectCode(t, "support reads apps", p.As(supportTok, "GET", "/admin/v1/apps", nil), 200, "0")
	harness.ExpectCode(t, "support rebuilds", p.As(supportTok, "POST", "/admin/v1/projections/orders/rebuild", nil), 202, "0")
	harness.ExpectCode(t, "support creates an app", p.As(supportTok, "POST", "/admin/v1/apps", map[string]any{"name": "x"}), 403, "ROLE_FORBIDDEN")
	harness.ExpectCode(t, "support lists operators", p.As(supportTok, "GET", "/admin/v1/operators", nil), 403, "ROLE_FORBIDDEN")
	harness.ExpectCode(t, "support creates an operator", p.As(supportTok, "POST", "/admin/v1/operators", map[string]any{"name": "x", "role": "admin"}), 403, "ROLE_FORBIDDEN")
	harness.ExpectCode(t, "support lists the audit", p.As(supportTok, "GET", "/admin/v1/audit", nil), 403, "ROLE_FORBIDDEN")
	harness.ExpectCode(t, "support uploads a report", p.As(supportTok, "POST", "/admin/v1/health-reports", map[string]any{}), 403, "ROLE_FORBIDDEN")
	if n := p.EventCount(); n != before {
		t.Fatalf("refused operator calls appended %d events", n-before)
	}

	harness.ExpectCode(t, "revoke", p.Admin("POST", fmt.Sprintf("/admin/v1/operators/%d/revoke", supportID), nil), 200, "0")
	n := p.EventCount()
	harness.ExpectCode(t, "revoke again", p.Admin("POST", fmt.Sprintf("/admin/v1/operators/%d/revoke", supportID), nil), 200, "0")
	if p.EventCount() != n {
		t.Error("revoking a revoked operator appended an event")
	}
	harness.ExpectCode(t, "revoked token", p.As(supportTok, "GET", "/admin/v1/apps", nil), 401, "HTTP_401")
	harness.ExpectCode(t, "unknown token", p.As("opr_nope", "GET", "/admin/v1/apps", nil), 401, "HTTP_401")
	p.Admin("GET", "/admin/v1/operators", nil).Data(t, &list)
	if list.Operators[1]["revoked"] != true || list.Operators[1]["revoked_at"] == nil {
		t.Fatalf("revoked operator listed as %+v", list.Operators[1])
	}

	// The directory is rebuilt from the log: after a restart the admin's
	// token still works and the revoked one still does not.
	p.Stop()
	p = harness.Start(t, p.Cfg)
	harness.ExpectCode(t, "admin after restart", p.As(adminTok, "GET", "/admin/v1/operators", nil), 200, "0")
	harness.ExpectCode(t, "revoked after restart", p.As(supportTok, "GET", "/admin/v1/apps", nil), 401, "HTTP_401")
}

// Admin reads of events show personal fields redacted; only an auditor who
// gives a reason sees them, and each reveal, like each partner report pull,
// is an audit fact the auditor can list and filter.
func TestAuditedReveal(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		userStream := fmt.Sprintf("user-%d", reg.OpenUserID)
		history := "/admin/v1/history?stream=" + userStream
		personal := []string{"110101199005010000", "13812345678", "李雷", "韩梅梅", "li@example.cn", "1990-05-01"}

		for _, path := range []string{history, "/admin/v1/events?limit=10000"} {
			res := p.Admin("GET", path, nil)
			harness.ExpectCode(t, path, res, 200, "0")
			for _, v := range personal {
				if strings.Contains(string(res.Raw), v) {
					t.Fatalf("%s shows %q without a reveal", path, v)
				}
			}
			// The partner's channel_user_id is personal too (often an e-mail or a phone).
			if !strings.Contains(string(res.Raw), `"[redacted]"`) || !strings.Contains(string(res.Raw), `"channel_user_id":"[redacted]"`) ||
				strings.Contains(string(res.Raw), `"u-1"`) {
				t.Fatalf("%s: %s", path, res.Raw)
			}
		}

		auditorID, auditorTok := p.Operator("Aud", "auditor")
		_, supportTok := p.Operator("Sup", "support")
		before := p.EventCount()
		harness.ExpectCode(t, "admin reveals", p.Admin("GET", history+"&reveal=true&reason=curious", nil), 403, "ROLE_FORBIDDEN")
		harness.ExpectCode(t, "support reveals", p.As(supportTok, "GET", history+"&reveal=true&reason=x", nil), 403, "ROLE_FORBIDDEN")
		res := p.As(auditorTok, "GET", history+"&reveal=true", nil)
		harness.ExpectCode(t, "reveal without reason", res, 422, "VALIDATION_ERROR")
		if len(res.Env.Errors["reason"]) == 0 {
			t.Errorf("errors %v", res.Env.Errors)
		}
		harness.ExpectCode(t, "reveal=maybe", p.As(auditorTok, "GET", history+"&reveal=maybe&reason=x", nil), 422, "VALIDATION_ERROR")
		harness.ExpectCode(t, "long reason", p.As(auditorTok, "GET", history+"&reveal=true&reason="+strings.Repeat("r", 501), nil), 422, "VALIDATION_ERROR")
		harness.ExpectCode(t, "auditor writes", p.As(auditorTok, "POST", "/admin/v1/apps", map[string]any{"name": "x"}), 403, "ROLE_FORBIDDEN")
		harness.ExpectCode(t, "audit bad from", p.As(auditorTok, "GET", "/admin/v1/audit?from=yesterday", nil), 422, "VALIDATION_ERROR")
		harness.ExpectCode(t, "audit bad limit", p.As(auditorTok, "GET", "/admin/v1/audit?limit=5000", nil), 422, "VALIDATION_ERROR")
		harness.ExpectCode(t, "audit bad after", p.As(auditorTok, "GET", "/admin/v1/audit?after=-1", nil), 422, "VALIDATION_ERROR")
		if n := p.EventCount(); n != before {
			t.Fatalf("refused reveals appended %d events", n-before)
		}

		// Revealed with a reason (header), then a page of the log (query).
		res = p.As(auditorTok, "GET", history+"&reveal=true", nil, "X-Audit-Reason", "DPO request 42")
		harness.ExpectCode(t, "reveal", res, 200, "0")
		for _, v := range personal {
			if !strings.Contains(string(res.Raw), v) {
				t.Fatalf("the reveal does not show %q: %s", v, res.Raw)
			}
		}
		harness.ExpectCode(t, "reveal page", p.As(auditorTok, "GET", "/admin/v1/events?limit=10000&reveal=true&reason=replay+check", nil), 200, "0")

		// A partner report pull is a fact too.
		up := p.Uploader("station")
		ing := p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, ""))
		var rep struct {
			ID int64 `json:"id"`
		}
		ing.Data(t, &rep)
		if res := a.Pull(rep.ID); res.Status != 200 {
			t.Fatalf("pull: %d %s", res.Status, res.Raw)
		}

		type fact struct {
			Seq      int64    `json:"seq"`
			Actor    string   `json:"actor"`
			Action   string   `json:"action"`
			Subjects []string `json:"subjects"`
			EventIDs []string `json:"event_ids"`
			ReportID int64    `json:"report_id"`
			Reason   string   `json:"reason"`
		}
		var page struct {
			Facts     []fact `json:"facts"`
			NextAfter *int64 `json:"next_after"`
		}
		list := func(query string) []fact {
			t.Helper()
			for range 50 { // the pull's fact is not awaited by the listing
				res := p.As(auditorTok, "GET", "/admin/v1/audit"+query, nil)
				harness.ExpectCode(t, "audit"+query, res, 200, "0")
				res.Data(t, &page)
				if !strings.Contains(query, "report") || len(page.Facts) > 0 {
					break
				}
				p.Node.WaitCaughtUp(t.Context())
			}
			return page.Facts
		}
		actor := fmt.Sprintf("operator:%d", auditorID)
		facts := list("?actor=" + url.QueryEscape(actor))
		if len(facts) != 2 || facts[0].Action != "reveal.history" || facts[0].Reason != "DPO request 42" ||
			facts[0].Subjects[0] != userStream || len(facts[0].EventIDs) < 4 || facts[1].Action != "reveal.events" || facts[1].Reason != "replay check" {
			t.Fatalf("reveal facts %+v", facts)
		}
		var f []fact
		for range 50 { // the pull's fact is not awaited by the listing
			if f = list("?subject=" + userStream); len(f) >= 3 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(f) != 3 { // both reveals and the pull
			t.Fatalf("facts about %s: %+v", userStream, f)
		}
		pulls := list(fmt.Sprintf("?subject=report-%d", rep.ID))
		if len(pulls) != 1 || pulls[0].Action != "report.pull" || pulls[0].Actor != fmt.Sprintf("app:%d", a.ID) || pulls[0].ReportID != rep.ID {
			t.Fatalf("pull facts %+v", pulls)
		}
		if f := list("?limit=1"); len(f) != 1 || page.NextAfter == nil || *page.NextAfter != f[0].Seq {
			t.Fatalf("first page %+v next %v", f, page.NextAfter)
		}
		if f := list("?from=2100-01-01T00:00:00Z"); len(f) != 0 {
			t.Fatalf("future facts %+v", f)
		}
		// The bootstrap admin may list the audit, too.
		harness.ExpectCode(t, "admin lists the audit", p.Admin("GET", "/admin/v1/audit", nil), 200, "0")
	})
}
