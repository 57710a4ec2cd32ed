package edge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// planes is one character from each Unicode plane that has assigned or
// private-use characters: ASCII, BMP CJK, SMP emoji, SIP, TIP, SSP tags and
// both supplementary private-use planes.
var planes = []rune{'A', '中', '\U0001F600', '\U00020000', '\U00030000', '\U000E0041', '\U000F0000', '\U0010FFFD'}

// runes repeats the plane sample up to exactly n characters.
func runes(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(planes[i%len(planes)])
	}
	return b.String()
}

// TestEveryAcceptedEdgeValueIsStoredByEveryAdapter: what the API refuses it
// refuses before appending (U+0000, lone surrogates, invalid UTF-8,
// duplicate keys), and whatever it accepts at the edge of its rules (maximum
// lengths in every plane, 2^53-1, the deepest nesting, NUL and lone surrogate
// escapes inside raw_data) comes back unchanged from both read-model stores,
// with the projection healthy afterwards.
func TestEveryAcceptedEdgeValueIsStoredByEveryAdapter(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("edges")

		before := p.EventCount()
		for _, c := range []struct{ name, body, field string }{
			{"NUL in a name", `{"channel_user_id":"nul-a","user":{"name":"A\u0000B"}}`, "user.name"},
			{"lone high surrogate", `{"channel_user_id":"s-a","user":{"name":"A\ud800"}}`, "user.name"},
			{"lone low surrogate", `{"channel_user_id":"s-b","user":{"name":"\udc00B"}}`, "user.name"},
			{"NUL in the partner id", `{"channel_user_id":"x\u0000","user":{"name":"A"}}`, "channel_user_id"},
			{"invalid UTF-8", "{\"channel_user_id\":\"u8\",\"user\":{\"name\":\"A\xffB\"}}", "body"},
			{"duplicate key", `{"channel_user_id":"d-1","channel_user_id":"d-2","user":{"name":"A"}}`, "channel_user_id"},
			{"too many groups", `{"channel_user_id":"g","user":{"name":"A"},"family_groups":[` + strings.TrimSuffix(strings.Repeat(`{"app_group_id":1,"name":"g"},`, 101), ",") + `]}`, "family_groups"},
		} {
			res := a.Expect("POST", "/open/v1/channel/users", c.body, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
			if len(res.Env.Errors[c.field]) == 0 {
				t.Errorf("%s: errors %v, want one on %s", c.name, res.Env.Errors, c.field)
			}
		}
		if got := p.EventCount(); got != before {
			t.Fatalf("refused registers appended %d events", got-before)
		}

		const maxSafe = 1<<53 - 1
		channelID := runes(100)
		reg := map[string]any{
			"channel_user_id": channelID,
			"user": map[string]any{
				"name": runes(32), "nickname": runes(32), "gender": "female", "birth_date": "1900-01-01",
				"avatar": "https://example.com/" + strings.Repeat("a", 500-len("https://example.com/")),
				"phone":  "13812345678", "email": "edge@example.com",
			},
			"family_groups": []any{map[string]any{"app_group_id": maxSafe, "name": runes(64)}},
			"family_members": []any{map[string]any{
				"app_user_id": runes(32), "app_group_id": maxSafe, "name": runes(32), "relationship": "SELF",
				"phone": runes(16), "id_type": runes(20), "id_number": runes(32), "height": 300, "weight": 50000,
				"blood_type": "AB", "is_default": true, "birth_date": "1900-01-01",
			}},
		}
		var data harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", reg, http.StatusCreated, "0").Data(t, &data)

		var snap struct {
			User struct {
				Name, Nickname, Avatar, ChannelUserID string
			} `json:"user"`
			Groups []struct {
				AppGroupID int64  `json:"app_group_id"`
				Name       string `json:"name"`
			} `json:"family_groups"`
			Members []struct {
				AppUserID string `json:"app_user_id"`
				Name      string `json:"name"`
				Phone     string `json:"phone"`
				IDType    string `json:"id_type"`
				Weight    int64  `json:"weight"`
			} `json:"family_members"`
		}
		res := a.Expect("GET", fmt.Sprintf("/open/v1/channel/users/%d", data.OpenUserID), nil, http.StatusOK, "0")
		if err := json.Unmarshal(res.Env.Data, &snap); err != nil {
			t.Fatal(err)
		}
		u := snap.User
		if u.Name != runes(32) || u.Nickname != runes(32) || u.Avatar != reg["user"].(map[string]any)["avatar"] {
			t.Errorf("user came back as %+v", u)
		}
		if len(snap.Groups) != 1 || snap.Groups[0].AppGroupID != maxSafe || snap.Groups[0].Name != runes(64) {
			t.Errorf("groups came back as %+v", snap.Groups)
		}
		if len(snap.Members) != 1 || snap.Members[0].AppUserID != runes(32) || snap.Members[0].Phone != runes(16) ||
			snap.Members[0].IDType != runes(20) || snap.Members[0].Weight != 50000 {
			t.Errorf("members came back as %+v", snap.Members)
		}
		byChannel := a.Expect("GET", "/open/v1/channel/users/0?channel_user_id="+urlQuery(channelID), nil, http.StatusOK, "0")
		if !bytes.Equal(byChannel.Env.Data, res.Env.Data) {
			t.Errorf("lookup by a 100-character channel id differs:\n%s\n%s", byChannel.Env.Data, res.Env.Data)
		}

		// raw_data keeps escapes of U+0000 and lone surrogates, numbers at and
		// beyond 2^53, every plane, and the deepest nesting a body may have
		// (the body is level 1, raw_data level 2).
		depth := 64 - 2
		deep := strings.Repeat(`{"d":`, depth) + `"\u0000\ud800` + runes(8) + `"` + strings.Repeat(`}`, depth)
		raw := `{"nul":"a\u0000b","lone":"\udfff\ud800","max":9007199254740991,"beyond":9007199254740993,` +
			`"planes":"` + runes(64) + `","deep":` + deep + `}`
		text, _ := json.Marshal(runes(20))
		body := fmt.Sprintf(`{"open_user_id":%d,"report_type":"BLOOD_PRESSURE","request_report_id":%s,"device_sn":%s,"raw_data":%s}`,
			data.OpenUserID, text, text, raw)
		up := p.Uploader("edge station")
		ing := p.Ingest(up, "POST", "/admin/v1/health-reports", []byte(body))
		if ing.Status != http.StatusCreated {
			t.Fatalf("ingest: %d %s", ing.Status, ing.Raw)
		}
		var created struct {
			ID int64 `json:"id"`
		}
		ing.Data(t, &created)
		pulled := a.Pull(created.ID)
		if pulled.Status != http.StatusOK {
			t.Fatalf("pull: %d %s", pulled.Status, pulled.Raw)
		}
		if !bytes.Contains(pulled.Raw, []byte(`"raw_data":`+raw)) {
			t.Fatalf("raw_data not returned byte for byte:\n%s", pulled.Raw)
		}

		// The read models took every event: ready, nothing skipped.
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Node.Runners {
			if s := r.Stats(); !s.Ready || s.LastError != "" || len(s.Skipped) > 0 {
				t.Fatalf("projection %s after edge values: %+v", s.Name, s)
			}
		}
	})
}

func urlQuery(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
