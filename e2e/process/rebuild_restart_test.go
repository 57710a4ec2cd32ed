package process

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// projectionList is GET /admin/v1/projections as an operator reads it.
type projectionList struct {
	Projections []struct {
		Name     string   `json:"name"`
		Position position `json:"position"`
		Target   position `json:"target"`
		Applied  uint64   `json:"events_applied"`
		Ready    bool     `json:"ready"`
		CaughtUp bool     `json:"caught_up"`
	} `json:"projections"`
	Snapshot *struct {
		OnDisk   bool      `json:"on_disk"`
		Position *position `json:"position"`
	} `json:"snapshot"`
}

type position struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

func (p position) less(q position) bool {
	return p.Commit < q.Commit || p.Commit == q.Commit && p.Prepare < q.Prepare
}

// readModelNames are the read models a rebuild of read_models resets.
var readModelNames = map[string]bool{"users": true, "deliveries": true, "reports": true, "orders": true, "benefits": true, "audit": true}

// admin sends an operator request and decodes the envelope's data into out.
func (s *server) admin(method, path string, status int, out any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.adminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		s.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out == nil {
		return
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		s.t.Fatal(err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		s.t.Fatal(err)
	}
}

func (s *server) projections() projectionList {
	var l projectionList
	s.admin("GET", "/admin/v1/projections", http.StatusOK, &l)
	return l
}

// settled waits until every projection has caught up and the log's end
// stayed put for a while (the webhook dispatcher appends the feed's
// entries after the writes they follow), and returns the list then.
func (s *server) settled() projectionList {
	s.t.Helper()
	var last position
	stable := 0
	for range 600 {
		l := s.projections()
		var end position
		caughtUp := true
		for _, p := range l.Projections {
			caughtUp = caughtUp && p.CaughtUp
			if end.less(p.Position) {
				end = p.Position
			}
		}
		if caughtUp && end == last {
			if stable++; stable == 10 {
				return l
			}
		} else {
			stable = 0
		}
		last = end
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("the projections did not settle: %+v", s.projections())
	return projectionList{}
}

// A rebuild of every read model shreds the snapshot; another is written as
// soon as the rebuild ends (the list shows it), so a kill -9 right after
// the rebuild restores the rebuilt read models and replays a tail of the
// log, not the whole of it. Neither the interval (an hour) nor the mark
// (10,000 events read) writes a snapshot here: the log is a few hundred
// events.
func TestKill9AfterARebuildReplaysOnlyATail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	dir := t.TempDir()
	env := "PLATFORM_SNAPSHOT_INTERVAL=1h"
	s := startServer(t, dir, env)
	app := s.createApp()
	for i := range 40 {
		status, data, err := s.signed(app, "POST", "/open/v1/channel/users", fmt.Sprintf(`{"channel_user_id":"rb-%d","user":{"name":"n"}}`, i))
		if err != nil || status != http.StatusCreated {
			t.Fatalf("register %d: %d %v", i, status, err)
		}
		id := int64(data["open_user_id"].(float64))
		if status, _, err := s.signed(app, "PATCH", fmt.Sprintf("/open/v1/channel/users/%d", id), `{"nickname":"x"}`); err != nil || status != http.StatusOK {
			t.Fatalf("patch %d: %d %v", i, status, err)
		}
	}
	s.settled()
	s.admin("POST", "/admin/v1/projections/read_models/rebuild", http.StatusAccepted, nil)

	// Every read model ready again, and the snapshot back on disk, holding
	// each of them at or past the head the rebuild replayed to.
	var rebuilt projectionList
	covered := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !covered; time.Sleep(25 * time.Millisecond) {
		rebuilt = s.projections()
		ready := 0
		var target position
		for _, p := range rebuilt.Projections {
			if readModelNames[p.Name] && p.Ready {
				ready++
				if target.less(p.Target) {
					target = p.Target
				}
			}
		}
		sn := rebuilt.Snapshot
		covered = ready == len(readModelNames) && sn != nil && sn.OnDisk && sn.Position != nil && !sn.Position.less(target)
	}
	if !covered {
		t.Errorf("60 s after the rebuild, no snapshot holds the rebuilt read models: %+v", rebuilt.Snapshot)
	}
	var whole uint64
	for _, p := range rebuilt.Projections {
		if p.Name == "users" {
			whole = p.Applied // the rebuild's replay: the whole log
		}
	}
	if whole < 120 {
		t.Fatalf("the rebuild of users replayed %d events; the log holds more", whole)
	}

	s.kill()
	r := startServer(t, dir, env)
	after := r.settled()
	for _, p := range after.Projections {
		// The tail is what the log gained after the snapshot: nothing was
		// written since; a few events of margin.
		if readModelNames[p.Name] && p.Applied > 10 {
			t.Errorf("after the kill -9, read model %s replayed %d events (the log: %d)", p.Name, p.Applied, whole)
		}
	}
}
