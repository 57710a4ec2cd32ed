package erasure_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestErasureReachesEveryNode runs two nodes on one Postgres event store,
// key table and read models. Node B has the user's key cached (an audited
// reveal on B showed the name) when node A erases the user; as soon as B's
// erasure follower has seen user.erased, a reveal, a snapshot and a report
// pull on B show no personal data of theirs, well inside the key cache's
// one-minute TTL.
func TestErasureReachesEveryNode(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	master := hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	cfg := func() node.Config {
		return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: master, AdminToken: "adm_shared_for_the_test"}
	}
	nodeA, nodeB := harness.Start(t, cfg()), harness.Start(t, cfg())
	a := nodeA.CreateApp("partner")
	body := harness.RegisterBody("u-everywhere")
	body["user"].(map[string]any)["name"] = "赵六"
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", body, http.StatusCreated, "0").Data(t, &reg)
	var report struct {
		ID int64 `json:"id"`
	}
	nodeA.Ingest(nodeA.Uploader("station"), "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, "")).Data(t, &report)
	_, auditor := nodeA.Operator("Aud", "auditor")

	onB := *a
	onB.P = nodeB
	history := fmt.Sprintf("/admin/v1/history?stream=user-%d&reveal=true", reg.OpenUserID)
	reveal := func() harness.Response {
		return nodeB.As(auditor, "GET", history, nil, "X-Audit-Reason", "DPO check")
	}
	eventually(t, "node B reveals the user before the erasure", func() bool {
		res := reveal()
		return res.Status == http.StatusOK && strings.Contains(string(res.Raw), "赵六")
	})
	eventually(t, "node B serves the user before the erasure", func() bool {
		return onB.P.Send(onB.Request("GET", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), nil, time.Now())).Status == http.StatusOK
	})

	seen := nodeB.Node.ErasureSeen()
	if res := nodeA.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", reg.OpenUserID), map[string]any{"reason": "ticket 7"}); res.Status != http.StatusOK {
		t.Fatalf("erase on A: %d %s", res.Status, res.Raw)
	}
	eventually(t, "node B sees the erasure event", func() bool { return seen.Less(nodeB.Node.ErasureSeen()) })

	res := reveal()
	harness.ExpectCode(t, "reveal on B", res, http.StatusOK, "0")
	if strings.Contains(string(res.Raw), "赵六") || strings.Contains(string(res.Raw), "110101199005010000") {
		t.Fatalf("node B still reveals the erased user: %s", res.Raw)
	}
	if !strings.Contains(string(res.Raw), `"user.erased"`) {
		t.Fatalf("the reveal on B does not show the erasure: %s", res.Raw)
	}
	eventually(t, "node B's snapshot is gone", func() bool {
		res := onB.P.Send(onB.Request("GET", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), nil, time.Now()))
		return res.Status == http.StatusNotFound && res.Code() == "USER_NOT_FOUND"
	})
	eventually(t, "node B's report pull has no personal field", func() bool {
		pulled := onB.Pull(report.ID)
		var rep map[string]json.RawMessage
		if pulled.Status != http.StatusOK || json.Unmarshal(pulled.Env.Data, &rep) != nil {
			return false
		}
		return string(rep["raw_data"]) == "null" && string(rep["interpretation_result"]) == "null"
	})
	// Decrypting the log on B (not only its read models) yields nothing of theirs.
	if shown := harness.Dump(t, nodeB.Node.Events); strings.Contains(shown, "赵六") {
		t.Fatal("node B's decrypting store still shows the erased name")
	}
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within 10s", what)
}
