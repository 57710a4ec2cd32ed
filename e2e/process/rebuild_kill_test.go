package process

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// TestKill9DuringAPostgresRebuildServesNoHalfReadModel: on the Postgres
// event store and read models, a rebuild of every read model is killed
// with SIGKILL while it replays (its rows are written in runs, its pages
// of the log shared, its keys read a page at a time). The restarted node
// resumes from the checkpoints the rebuild committed with its rows.
func TestKill9DuringAPostgresRebuildServesNoHalfReadModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	db := pgtest.New(t)
	kill9DuringARebuild(t, "PLATFORM_EVENTSTORE_URL="+db, "PLATFORM_POSTGRES_URL="+db, "PLATFORM_PORTAL_BASE_URL=http://127.0.0.1")
}

// TestKill9DuringAnEmbeddedRebuildServesNoHalfReadModel: on the embedded
// node, a rebuild of every read model (one reader feeding them all) is
// killed with SIGKILL while it replays; the restarted node replays the
// log, its snapshot having been shredded by the rebuild.
func TestKill9DuringAnEmbeddedRebuildServesNoHalfReadModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	kill9DuringARebuild(t)
}

// kill9DuringARebuild: a rebuild of every read model is killed with
// SIGKILL while it replays. No read model of the restarted node reads
// ready before it reached its target: every poll of the projections from
// the start on shows ready ones at or past their target, and once /readyz
// answers every user reads as before the rebuild; so they do again after
// the restarted node rebuilt every read model to its end.
func kill9DuringARebuild(t *testing.T, env ...string) {
	dir := t.TempDir()
	s := startServer(t, dir, env...)
	app := s.createApp()
	register := func(s *server, i int) int64 {
		status, data, err := s.signed(app, "POST", "/open/v1/channel/users",
			fmt.Sprintf(`{"channel_user_id":"pk-%d","user":{"name":"n%d"}}`, i, i))
		if err != nil || status != http.StatusCreated {
			t.Fatalf("register %d: %d %v", i, status, err)
		}
		id := int64(data["open_user_id"].(float64))
		if status, _, err := s.signed(app, "PATCH", fmt.Sprintf("/open/v1/channel/users/%d", id), fmt.Sprintf(`{"nickname":"x%d"}`, i)); err != nil || status != http.StatusOK {
			t.Fatalf("patch %d: %d %v", i, status, err)
		}
		return id
	}
	var ids []int64
	for i := range 150 {
		ids = append(ids, register(s, i))
	}
	s.settled()
	read := func(s *server) []map[string]any {
		var out []map[string]any
		for _, id := range ids {
			status, data, err := s.signed(app, "GET", fmt.Sprintf("/open/v1/channel/users/%d", id), "")
			if err != nil || status != http.StatusOK {
				t.Fatalf("read user %d: %d %v", id, status, err)
			}
			out = append(out, data)
		}
		return out
	}
	before := read(s)

	s.admin("POST", "/admin/v1/projections/read_models/rebuild", http.StatusAccepted, nil)
	// Killed once the users read model replayed part of the log, or at
	// once if it was done before the first look.
	var at string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && at == ""; time.Sleep(2 * time.Millisecond) {
		for _, p := range s.projections().Projections {
			if p.Name == "users" && (p.Ready || p.Applied > 0) {
				at = fmt.Sprintf("users at %d of %d, ready %v", p.Position.Commit, p.Target.Commit, p.Ready)
			}
		}
	}
	s.kill()
	t.Logf("killed with %s", at)

	r := launch(t, dir, "/healthz", env...)
	for deadline := time.Now().Add(60 * time.Second); ; {
		l := r.projections()
		ready := 0
		for _, p := range l.Projections {
			if !readModelNames[p.Name] || !p.Ready {
				continue
			}
			ready++
			if p.Position.less(p.Target) {
				t.Fatalf("read model %s reads ready at %v, before its target %v", p.Name, p.Position, p.Target)
			}
		}
		if ready == len(readModelNames) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read models did not all catch up after the kill -9: %+v", l.Projections)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if res, err := http.Get(r.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no /readyz after the kill -9")
		}
	}
	if after := read(r); !reflect.DeepEqual(after, before) {
		t.Fatalf("users after the interrupted rebuild differ:\nbefore %v\nafter  %v", before, after)
	}
	r.admin("POST", "/admin/v1/projections/read_models/rebuild", http.StatusAccepted, nil)
	r.settled()
	if after := read(r); !reflect.DeepEqual(after, before) {
		t.Fatalf("users after a rebuild of the restarted node differ:\nbefore %v\nafter  %v", before, after)
	}
	// The read models follow the log on after the rebuild.
	id := register(r, len(ids))
	status, data, err := r.signed(app, "GET", fmt.Sprintf("/open/v1/channel/users/%d", id), "")
	user, _ := data["user"].(map[string]any)
	if err != nil || status != http.StatusOK || user["nickname"] != fmt.Sprintf("x%d", len(ids)) {
		t.Fatalf("a user registered after the rebuild reads %d %v %v", status, data, err)
	}
}
