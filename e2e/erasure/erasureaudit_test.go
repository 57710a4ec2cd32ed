package erasure_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// An erasure is an audit fact: GET /admin/v1/audit lists who erased whom,
// when and why (action user.erased), found by action, subject and actor
// like the reveals; the erased person's channel_user_id is not in it; a
// refused erasure adds no fact; a rebuild of the audit read model lists it the
// same.
func TestErasureIsAnAuditFact(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		var gone harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("dpo-channel-id-7"), http.StatusCreated, "0").Data(t, &gone)
		eraserID, eraser := p.Operator("Eraser", "admin")
		_, auditor := p.Operator("Aud", "auditor")
		subject := fmt.Sprintf("user-%d", gone.OpenUserID)
		// A reveal about the same person, so the listing holds both kinds.
		if res := p.As(auditor, "GET", "/admin/v1/history?stream="+subject+"&reveal=true&reason=ticket+41", nil); res.Status != http.StatusOK {
			t.Fatalf("reveal: %d %s", res.Status, res.Raw)
		}
		erase := fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID)
		if res := p.As(eraser, "POST", erase, map[string]any{"reason": "PIPL request ticket 42"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		list := func(query string) ([]harness.AuditFact, string) {
			t.Helper()
			res := p.As(auditor, "GET", "/admin/v1/audit?"+query, nil)
			harness.ExpectCode(t, "audit "+query, res, http.StatusOK, "0")
			var page struct {
				Facts []harness.AuditFact `json:"facts"`
			}
			res.Data(t, &page)
			return page.Facts, string(res.Raw)
		}
		actor := fmt.Sprintf("operator:%d", eraserID)
		erasures, raw := list("action=user.erased")
		if len(erasures) != 1 {
			t.Fatalf("erasure facts: %s", raw)
		}
		e := erasures[0]
		if e.Actor != actor || e.Action != "user.erased" || len(e.Subjects) != 1 || e.Subjects[0] != subject ||
			e.Reason != "PIPL request ticket 42" || e.AppID != a.ID || len(e.EventIDs) != 1 || e.EventIDs[0] != e.EventID || e.At == "" {
			t.Fatalf("erasure fact %+v, want actor %s subject %s", e, actor, subject)
		}
		if strings.Contains(raw, "dpo-channel-id-7") {
			t.Fatalf("the erasure fact shows the erased person's channel_user_id: %s", raw)
		}
		// The fact names the user.erased event of the log.
		if res := p.As(auditor, "GET", "/admin/v1/history?stream="+subject, nil); !strings.Contains(string(res.Raw), `"`+e.EventID+`"`) {
			t.Fatalf("no event %s in %s's history: %s", e.EventID, subject, res.Raw)
		}
		bySubject, _ := list("subject=" + subject)
		if len(bySubject) != 2 || bySubject[0].Action != "reveal.history" || bySubject[1].EventID != e.EventID {
			t.Fatalf("facts about %s: %+v", subject, bySubject)
		}
		if byActor, _ := list("actor=" + url.QueryEscape(actor)); len(byActor) != 1 || byActor[0].EventID != e.EventID {
			t.Fatalf("facts by %s: %+v", actor, byActor)
		}
		if none, _ := list("action=user.erased&to=2000-01-01T00:00:00Z"); len(none) != 0 {
			t.Fatalf("erasures before 2000: %+v", none)
		}

		// A refused erasure (the user is gone) is no fact.
		if res := p.As(eraser, "POST", erase, map[string]any{"reason": "again"}); res.Status != http.StatusNotFound {
			t.Fatalf("second erase: %d %s", res.Status, res.Raw)
		}
		if again, _ := list("action=user.erased"); len(again) != 1 {
			t.Fatalf("erasure facts after a refused erase: %+v", again)
		}

		if res := p.Admin("POST", "/admin/v1/projections/audit/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
		}
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		rebuilt, _ := list("action=user.erased")
		if a, b := mustJSON(t, rebuilt), mustJSON(t, erasures); a != b {
			t.Fatalf("after a rebuild\n got %s\nwant %s", a, b)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
