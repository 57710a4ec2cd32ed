package upgrade

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

// replayAcross sends a signed register to writer, then its identical copy
// (same signature, same body) to replayer, as a partner's retry may land on
// another node: the copy must answer the first answer byte for byte,
// marked replayed, whichever release recorded it and whichever reads it.
func replayAcross(t *testing.T, p proc.Creds, writer, replayer *proc.Node, channelID string) {
	t.Helper()
	body := proc.MustJSON(map[string]any{"channel_user_id": channelID, "user": map[string]any{"name": "升级"},
		"family_groups":  []any{map[string]any{"app_group_id": 1, "name": "home"}},
		"family_members": []any{map[string]any{"app_user_id": "m-0", "app_group_id": 1, "name": "self", "relationship": "SELF"}}})
	first, err := proc.SignedM(p, "POST", "/open/v1/channel/users", body)(writer.Base)
	if err != nil {
		t.Fatal(err)
	}
	again, err := http.NewRequest(http.MethodPost, replayer.Base+"/open/v1/channel/users", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	again.Header = first.Header.Clone()
	hc := &http.Client{Timeout: 15 * time.Second}
	do := func(req *http.Request) (int, http.Header, []byte) {
		res, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", req.Method, req.URL, err)
			return 0, nil, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b
	}
	status, _, answer := do(first)
	if status != http.StatusCreated {
		t.Errorf("signed register on node %d: %d %s", writer.Idx, status, answer)
		return
	}
	status, header, replayed := do(again)
	if status != http.StatusCreated || !bytes.Equal(replayed, answer) || header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("its replay on node %d: %d %s (replayed %q), want node %d's answer %s replayed",
			replayer.Idx, status, replayed, header.Get("Idempotent-Replayed"), writer.Idx, answer)
	}
}
