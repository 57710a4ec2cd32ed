package auth_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
)

// On Postgres, with the event store and the read models in one database, an
// authenticated snapshot read's app is confirmed current at the log's head
// that the snapshot's own statement reads: counted through a proxy that
// sees every statement node one sends, ten snapshot reads in a row send no
// head read of their own (the app directory's `SELECT coalesce(max(position),
// 0) FROM es_events`). Node one still decides each read on what node two
// acknowledged before it arrived: a suspension refuses the next read on
// node one (403, no snapshot in the answer), a resume lets the next one
// through and shows a write made on node two, and after a secret rotation
// the old secret is refused (401) and the new one accepted.
func TestSnapshotReadSendsNoHeadReadOfItsOwn(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	stmts, proxied := harness.CountStatements(t, db)
	one := harness.Start(t, harness.ClusterConfig(t, proxied, "node-one", 0))
	two := harness.Start(t, harness.ClusterConfig(t, db, "node-two", 0))
	a := two.CreateApp("snapshot-head-rides")
	onOne, onTwo := a.On(one), a.On(two)
	var reg harness.RegisterData
	onOne.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("snap-head-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	onOne.Expect("GET", user, nil, http.StatusOK, "0")

	headReads := func() int { return stmts.Count(harness.Is(pgevents.HeadQuery)) }
	before := headReads()
	const n = 10
	for range n {
		onOne.Expect("GET", user, nil, http.StatusOK, "0")
		time.Sleep(20 * time.Millisecond)
	}
	if got := headReads() - before; got > 1 {
		t.Errorf("%d snapshot reads sent %d head reads of their own, want none (one at most from the node's background work)", n, got)
	}

	read := func(status int, code string) harness.Response {
		t.Helper()
		res := onOne.Expect("GET", user, nil, status, code)
		if status != http.StatusOK && strings.Contains(string(res.Raw), "family_groups") {
			t.Errorf("the refused read answered the snapshot: %s", res.Raw)
		}
		return res
	}
	if res := two.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "unpaid"}); res.Status != http.StatusOK {
		t.Fatalf("suspend on node two: %d %s", res.Status, res.Raw)
	}
	read(http.StatusForbidden, "APP_SUSPENDED")
	if res := two.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", a.ID), nil); res.Status != http.StatusOK {
		t.Fatalf("resume on node two: %d %s", res.Status, res.Raw)
	}
	onTwo.Expect("PATCH", user, map[string]any{"nickname": "written-on-two"}, http.StatusOK, "0")
	var snap struct {
		User struct {
			Nickname string `json:"nickname"`
		} `json:"user"`
	}
	read(http.StatusOK, "0").Data(t, &snap)
	if snap.User.Nickname != "written-on-two" {
		t.Errorf("the read on node one after a write on node two shows nickname %q, want written-on-two", snap.User.Nickname)
	}
	res := two.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", a.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate on node two: %d %s", res.Status, res.Raw)
	}
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res.Data(t, &rotated)
	read(http.StatusUnauthorized, "HTTP_401")
	onOne.Secret = rotated.Secret
	read(http.StatusOK, "0")
}
