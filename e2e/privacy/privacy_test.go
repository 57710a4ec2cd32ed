package privacy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestPersonalDataEncryptedAtRest registers a member with a national id
// number and uploads a report: neither the bbolt file nor the undecorated
// store holds the number or the other personal values in clear, while the
// partner's snapshot and report pull show them (raw_data byte for byte).
func TestPersonalDataEncryptedAtRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("partner")
	body := harness.RegisterBody("u-crypto")
	body["family_members"].([]any)[0].(map[string]any)["id_number"] = "11010519491231002X"
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", body, http.StatusCreated, "0").Data(t, &reg)
	up := p.Uploader("station network")
	res := p.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, `,"request_report_id":"R-1"`))
	if res.Status != http.StatusCreated {
		t.Fatalf("ingest: %d %s", res.Status, res.Raw)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	res.Data(t, &created)

	s := a.Snapshot(fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID))
	if s.User.Name != "李雷" || len(s.FamilyMembers) != 2 || s.FamilyMembers[0].Name != "李雷" || *s.FamilyMembers[0].IDType != "ID_CARD" {
		t.Fatalf("snapshot %+v", s)
	}
	var pulled map[string]json.RawMessage
	a.Pull(created.ID).Data(t, &pulled)
	if string(pulled["raw_data"]) != harness.AwkwardStripped {
		t.Fatalf("raw_data changed:\n got %s\nwant %s", pulled["raw_data"], harness.AwkwardStripped)
	}

	personal := []string{"11010519491231002X", "李雷", "韩梅梅", "13812345678", "li@example.cn", "1990-05-01",
		"Nurse Wu", "123456789012345678901234567890", "risk_level"}
	// The decorated store shows the number; the stored form does not.
	shown, stored := harness.Dump(t, p.Node.Events), harness.Dump(t, p.Node.StoredEvents)
	if !strings.Contains(shown, "11010519491231002X") {
		t.Fatal("the decorated store does not show the id number")
	}
	for _, v := range personal {
		if strings.Contains(stored, v) {
			t.Errorf("the stored events hold %q in clear", v)
		}
	}
	if !strings.Contains(stored, `{"$enc":"`) {
		t.Fatal("no envelope in the stored events")
	}
	p.Stop()
	raw, err := os.ReadFile(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range personal {
		if strings.Contains(string(raw), v) {
			t.Errorf("events.db holds %q in clear", v)
		}
	}
}
