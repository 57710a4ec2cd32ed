package privacy_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

type accessEntry struct {
	Seq          int64   `json:"seq"`
	At           string  `json:"at"`
	Action       string  `json:"action"`
	AccessorRole string  `json:"accessor_role"`
	Accessor     string  `json:"accessor"`
	Reason       string  `json:"reason"`
	OpenUserIDs  []int64 `json:"open_user_ids"`
	ReportID     *int64  `json:"report_id"`
}

type accessPage struct {
	Accesses  []accessEntry `json:"accesses"`
	NextAfter *int64        `json:"next_after"`
}

// Access transparency: an app reads who accessed its users' data and why,
// its own report pulls and the operators' reveals naming its users (role
// and pseudonymous id, never the operator's name), filtered by user and
// time and paged; another app's users and their reveals never show, and
// another app's user as a filter is a 404 like a missing one.
func TestAccessLogShowsAnAppWhoReadItsUsersData(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a, b := p.CreateApp("partner-a"), p.CreateApp("partner-b")
		var ua, ua2, ub harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("a-1"), http.StatusCreated, "0").Data(t, &ua)
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("a-2"), http.StatusCreated, "0").Data(t, &ua2)
		b.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("b-1"), http.StatusCreated, "0").Data(t, &ub)
		res := p.Ingest(p.Uploader("station"), "POST", "/admin/v1/health-reports", harness.ReportBody(ua.OpenUserID, ""))
		if res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
		var report struct {
			ID int64 `json:"id"`
		}
		res.Data(t, &report)
		a.Pull(report.ID)
		auditorID, auditor := p.Operator("Ada Lovelace", "auditor")
		for _, c := range []struct {
			user   int64
			reason string
		}{{ua.OpenUserID, "DPO ticket 5"}, {ub.OpenUserID, "other app ticket"}} {
			path := fmt.Sprintf("/admin/v1/history?stream=user-%d&reveal=true&reason=%s", c.user, url.QueryEscape(c.reason))
			harness.ExpectCode(t, "reveal", p.As(auditor, "GET", path, nil), http.StatusOK, "0")
		}

		read := func(app *harness.App, query string, want int) (accessPage, string) {
			t.Helper()
			deadline := time.Now().Add(harness.WaitBound)
			for {
				res := app.Expect("GET", "/open/v1/access-log"+query, nil, http.StatusOK, "0")
				var page accessPage
				res.Data(t, &page)
				if len(page.Accesses) >= want || time.Now().After(deadline) {
					return page, string(res.Raw)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		page, raw := read(a, "", 2)
		if len(page.Accesses) != 2 {
			t.Fatalf("app A's access log: %s", raw)
		}
		pull, reveal := page.Accesses[0], page.Accesses[1]
		if pull.Action != "report.pull" || pull.AccessorRole != "app" || pull.Accessor != fmt.Sprintf("app:%d", a.ID) ||
			pull.ReportID == nil || *pull.ReportID != report.ID || fmt.Sprint(pull.OpenUserIDs) != fmt.Sprint([]int64{ua.OpenUserID}) {
			t.Fatalf("the pull %+v", pull)
		}
		if reveal.Action != "reveal.history" || reveal.AccessorRole != "auditor" || reveal.Accessor != fmt.Sprintf("operator:%d", auditorID) ||
			reveal.Reason != "DPO ticket 5" || fmt.Sprint(reveal.OpenUserIDs) != fmt.Sprint([]int64{ua.OpenUserID}) || reveal.ReportID != nil || reveal.At == "" {
			t.Fatalf("the reveal %+v", reveal)
		}
		for _, hidden := range []string{"Ada Lovelace", "other app ticket", fmt.Sprintf("user-%d", ub.OpenUserID)} {
			if strings.Contains(raw, hidden) {
				t.Fatalf("app A's access log shows %q: %s", hidden, raw)
			}
		}
		if page, raw := read(b, "", 1); len(page.Accesses) != 1 || page.Accesses[0].Reason != "other app ticket" ||
			fmt.Sprint(page.Accesses[0].OpenUserIDs) != fmt.Sprint([]int64{ub.OpenUserID}) {
			t.Fatalf("app B's access log: %s", raw)
		}

		// Filters: by user, by time; pages.
		if page, raw := read(a, fmt.Sprintf("?open_user_id=%d", ua.OpenUserID), 2); len(page.Accesses) != 2 {
			t.Fatalf("by user: %s", raw)
		}
		if page, raw := read(a, fmt.Sprintf("?open_user_id=%d", ua2.OpenUserID), 0); len(page.Accesses) != 0 {
			t.Fatalf("a user nobody read: %s", raw)
		}
		future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
		past := url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339))
		if page, raw := read(a, "?from="+future, 0); len(page.Accesses) != 0 {
			t.Fatalf("from the future: %s", raw)
		}
		if page, raw := read(a, "?to="+past, 0); len(page.Accesses) != 0 {
			t.Fatalf("until an hour ago: %s", raw)
		}
		if page, raw := read(a, "?from="+past+"&to="+future, 2); len(page.Accesses) != 2 {
			t.Fatalf("the last two hours: %s", raw)
		}
		first, raw := read(a, "?limit=1", 1)
		if len(first.Accesses) != 1 || first.NextAfter == nil || first.Accesses[0].Action != "report.pull" {
			t.Fatalf("first page: %s", raw)
		}
		second, raw := read(a, fmt.Sprintf("?limit=1&after=%d", *first.NextAfter), 1)
		if len(second.Accesses) != 1 || second.Accesses[0].Action != "reveal.history" {
			t.Fatalf("second page: %s", raw)
		}

		// Tenancy and bad input: 404 like a missing user, the spec's codes, nothing appended.
		before := p.EventCount()
		a.Expect("GET", fmt.Sprintf("/open/v1/access-log?open_user_id=%d", ub.OpenUserID), nil, http.StatusNotFound, "USER_NOT_FOUND")
		a.Expect("GET", "/open/v1/access-log?open_user_id=987654321", nil, http.StatusNotFound, "USER_NOT_FOUND")
		for _, q := range []string{"?limit=x", "?limit=1001", "?after=-1", "?from=yesterday", "?open_user_id=abc"} {
			a.Expect("GET", "/open/v1/access-log"+q, nil, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("reading the access log appended %d events", n-before)
		}
	})
}
