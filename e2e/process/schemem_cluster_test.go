package process

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

// Two platform processes on one Postgres: a spec-faithful scheme M client
// reads a snapshot through one node and, in the same second, deletes a
// family member and dissolves a group through the other; all three
// bodyless requests share one signature and all succeed. The delete's
// identical replay, through the first node, answers its first answer,
// marked replayed.
func TestClusterSpecFaithfulSchemeMSameSecond(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two platform processes")
	}
	c := proc.Start(t, proc.Options{Nodes: 2})
	p := c.CreatePartner("same-second")
	var reg struct {
		OpenUserID   int64 `json:"open_user_id"`
		FamilyGroups []struct {
			FamilyGroupID int64 `json:"family_group_id"`
		} `json:"family_groups"`
		FamilyMembers []struct {
			MemberID int64 `json:"member_id"`
		} `json:"family_members"`
	}
	c.PartnerCall(p.Creds, "POST", "/open/v1/channel/users", map[string]any{
		"channel_user_id": "cluster-same-second", "user": map[string]any{"name": "李雷"},
		"family_groups":  []any{map[string]any{"app_group_id": 1, "name": "Home"}},
		"family_members": []any{map[string]any{"app_user_id": "m1", "app_group_id": 1, "name": "Dad", "relationship": "FATHER"}},
	}, http.StatusCreated, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	c.AwaitEverywhere(p.Creds, user, time.Minute)

	sec := strconv.FormatInt(time.Now().Unix(), 10)
	sig := fmt.Sprintf("%x", md5.Sum([]byte(p.Key+sec+p.Secret)))
	send := func(node int, method, path string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, c.Nodes[node].Base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-App-Id", strconv.FormatInt(p.AppID, 10))
		req.Header.Set("X-Timestamp", sec)
		req.Header.Set("X-Signature", sig)
		res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, body
	}
	member := fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[0].MemberID)
	var deleted []byte
	for _, s := range []struct {
		node         int
		method, path string
	}{
		{0, "GET", user},
		{1, "DELETE", member},
		{0, "DELETE", fmt.Sprintf("%s/family-groups/%d", user, reg.FamilyGroups[0].FamilyGroupID)},
	} {
		status, _, body := send(s.node, s.method, s.path)
		if status != http.StatusOK {
			t.Fatalf("%s %s on node %d, signed in the same second: %d %s", s.method, s.path, s.node, status, body)
		}
		if s.path == member {
			deleted = body
		}
	}
	status, header, body := send(0, "DELETE", member)
	if status != http.StatusOK || !bytes.Equal(body, deleted) || header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the delete replayed on node 0: %d %s (replayed %q), want the first answer %s replayed", status, body, header.Get("Idempotent-Replayed"), deleted)
	}
}
