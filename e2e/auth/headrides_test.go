package auth_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
)

// On Postgres, with the event store and the read models in one database, a
// signed write's app is confirmed current at the log's head that the
// statement binding its signature and claiming the write reads: counted
// through a proxy that sees every statement node one sends, ten signed
// PATCHes in a row send no head read of their own (the app directory's
// `SELECT coalesce(max(position), 0) FROM es_events`; one per PATCH
// otherwise, as they come one at a time). Node one still decides each
// write on what node two acknowledged before it arrived: a suspension
// refuses the next PATCH on node one (403, nothing appended), a resume
// lets the next one through, and after a secret rotation the old secret
// is refused (401, nothing appended) and the new one accepted.
func TestSignedWriteSendsNoHeadReadOfItsOwn(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	stmts, proxied := harness.CountStatements(t, db)
	one := harness.Start(t, harness.ClusterConfig(t, proxied, "node-one", 0))
	two := harness.Start(t, harness.ClusterConfig(t, db, "node-two", 0))
	a := two.CreateApp("head-rides")
	onOne := a.On(one)
	var reg harness.RegisterData
	onOne.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("head-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	onOne.Expect("PATCH", user, map[string]any{"nickname": "warm-up"}, http.StatusOK, "0")

	headReads := func() int { return stmts.Count(harness.Is(pgevents.HeadQuery)) }
	before := headReads()
	const n = 10
	for i := range n {
		onOne.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("rides-%d", i)}, http.StatusOK, "0")
		time.Sleep(20 * time.Millisecond)
	}
	if got := headReads() - before; got > 1 {
		t.Errorf("%d signed PATCHes sent %d head reads of their own, want none (one at most from the node's background work)", n, got)
	}

	patch := func(nickname string, status int, code string) {
		t.Helper()
		events := one.EventCount()
		onOne.Expect("PATCH", user, map[string]any{"nickname": nickname}, status, code)
		if status != http.StatusOK && one.EventCount() != events {
			t.Errorf("the refused PATCH %q appended %d events", nickname, one.EventCount()-events)
		}
	}
	if res := two.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "unpaid"}); res.Status != http.StatusOK {
		t.Fatalf("suspend on node two: %d %s", res.Status, res.Raw)
	}
	patch("while-suspended", http.StatusForbidden, "APP_SUSPENDED")
	if res := two.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", a.ID), nil); res.Status != http.StatusOK {
		t.Fatalf("resume on node two: %d %s", res.Status, res.Raw)
	}
	patch("resumed", http.StatusOK, "0")
	res := two.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", a.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate on node two: %d %s", res.Status, res.Raw)
	}
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res.Data(t, &rotated)
	patch("old-secret", http.StatusUnauthorized, "HTTP_401")
	onOne.Secret = rotated.Secret
	patch("new-secret", http.StatusOK, "0")
}
