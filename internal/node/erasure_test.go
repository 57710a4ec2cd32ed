package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestEraseChannelUser erases a user: their personal fields read as null in
// the log from then on, the users read model drops them (404 USER_NOT_FOUND
// for the partner), the channel_user_id registers again as a new person, and
// a full rebuild after the erasure gives the same read models.
func TestEraseChannelUser(t *testing.T) {
	readModels(t, func(t *testing.T, cfg node.Config) {
		p := start(t, cfg)
		a := p.createApp("partner")
		body := registerBody("u-erase")
		body["user"].(map[string]any)["name"] = "赵六"
		body["family_members"].([]any)[0].(map[string]any)["id_number"] = "11010519491231002X"
		var gone, kept registerData
		a.expect("POST", "/open/v1/channel/users", body, http.StatusCreated, "0").data(t, &gone)
		a.expect("POST", "/open/v1/channel/users", registerBody("u-keep"), http.StatusCreated, "0").data(t, &kept)
		goneUser := fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID)
		res := p.ingest(p.uploader("station"), "POST", "/admin/v1/health-reports", reportBody(gone.OpenUserID, ""))
		if res.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", res.Status, res.Raw)
		}
		var report struct {
			ID int64 `json:"id"`
		}
		res.data(t, &report)
		erase := fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID)

		res = p.admin("POST", erase, map[string]any{"reason": "PIPL request ticket 42"})
		if res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		a.expect("GET", goneUser, nil, http.StatusNotFound, "USER_NOT_FOUND")
		// The report stays (ids, type, times) with its personal fields null.
		pulled := a.pull(report.ID)
		var rep map[string]json.RawMessage
		pulled.data(t, &rep)
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(rep["meta"], &meta)
		for name, v := range map[string]json.RawMessage{"raw_data": rep["raw_data"], "file_path": rep["file_path"],
			"interpretation_result": rep["interpretation_result"], "interpretation_detail": rep["interpretation_detail"], "operator_name": meta["operator_name"]} {
			if string(v) != "null" {
				t.Errorf("erased report's %s = %s", name, v)
			}
		}
		if string(rep["report_type"]) != `"BLOOD_PRESSURE"` {
			t.Errorf("erased report lost its type: %s", pulled.Raw)
		}
		a.expect("PATCH", goneUser, map[string]any{"nickname": "x"}, http.StatusNotFound, "USER_NOT_FOUND")
		before := p.eventCount()
		if res := p.admin("POST", erase, map[string]any{"reason": "again"}); res.Status != http.StatusNotFound || res.code() != "USER_NOT_FOUND" {
			t.Fatalf("second erase: %d %s", res.Status, res.Raw)
		}
		if n := p.eventCount(); n != before {
			t.Fatalf("a refused erase appended %d events", n-before)
		}
		// Even the decrypting store has nothing of theirs any more.
		shown := dump(t, p.node.Events)
		for _, v := range []string{"11010519491231002X", "赵六"} {
			if strings.Contains(shown, v) {
				t.Errorf("after erasure the log still shows %q", v)
			}
		}
		if !strings.Contains(shown, `"reason":"PIPL request ticket 42"`) {
			t.Fatal("no user.erased event with the reason")
		}

		// The partner's channel_user_id is free: a new person, a new id.
		var again registerData
		a.expect("POST", "/open/v1/channel/users", registerBody("u-erase"), http.StatusCreated, "0").data(t, &again)
		if again.OpenUserID == gone.OpenUserID || !again.Created {
			t.Fatalf("re-register: %+v", again)
		}
		keptUser := fmt.Sprintf("/open/v1/channel/users/%d", kept.OpenUserID)
		againUser := fmt.Sprintf("/open/v1/channel/users/%d", again.OpenUserID)
		want := []string{fmt.Sprintf("%+v", deref(a.snapshot(keptUser))), fmt.Sprintf("%+v", deref(a.snapshot(againUser))), string(a.pull(report.ID).Env.Data)}

		if res := p.admin("POST", "/admin/v1/projections/read_models/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
		}
		if err := p.node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := []string{fmt.Sprintf("%+v", deref(a.snapshot(keptUser))), fmt.Sprintf("%+v", deref(a.snapshot(againUser))), string(a.pull(report.ID).Env.Data)}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("after rebuild\n got %v\nwant %v", got, want)
		}
		a.expect("GET", goneUser, nil, http.StatusNotFound, "USER_NOT_FOUND")
	})
}
