package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

type apps map[int64]domain.App

func (d apps) ByID(id int64) (domain.App, bool) { a, ok := d[id]; return a, ok }
func (d apps) ByKey(string) (domain.App, bool)  { return domain.App{}, false }

var bound = domain.App{AppID: 9, AppKey: "ak_bound", AppSecret: "as_bound", Scopes: []string{"channel_users"}}

func verify(t *testing.T, s auth.SchemeM, method, target, body string, ts int64) error {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	sec := strconv.FormatInt(ts, 10)
	r.Header.Set("X-App-Id", "9")
	r.Header.Set("X-Timestamp", sec)
	r.Header.Set("X-Signature", auth.SignM(bound.AppKey, sec, bound.AppSecret, []byte(body)))
	_, err := s.Verify(r, []byte(body))
	return err
}

// Two nodes sharing one store: a signature accepted on one node for one
// route is accepted on the other for another route only within
// BindingGrace of its first use (a partner's read and delete of one
// second), refused there after it, and always accepted for the same route
// or a route the grace let in.
func TestSignatureBindingHoldsAcrossNodes(t *testing.T) {
	stores := map[string]func(t *testing.T) (auth.Bindings, auth.Bindings){
		"memory": func(t *testing.T) (auth.Bindings, auth.Bindings) { s := memory.New(); return s, s },
		"postgres": func(t *testing.T) (auth.Bindings, auth.Bindings) {
			url := pgtest.New(t)
			open := func() *postgres.Store {
				s, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			return open(), open()
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			one, two := open(t)
			start := time.Unix(time.Now().Unix(), 0)
			now := start
			clock := func() time.Time { return now }
			nodeA := auth.SchemeM{Apps: apps{9: bound}, Now: clock, Bindings: one}
			nodeB := auth.SchemeM{Apps: apps{9: bound}, Now: clock, Bindings: two}
			ts := start.Unix()
			read, del := "/open/v1/channel/users/1", "/open/v1/channel/users/1/family-members/1"

			if err := verify(t, nodeA, "GET", read, "", ts); err != nil {
				t.Fatalf("first use on node A: %v", err)
			}
			// The same second's delete and another read, on node B, within the grace.
			now = start.Add(auth.BindingGrace)
			if err := verify(t, nodeB, "DELETE", del, "", ts); err != nil {
				t.Errorf("delete of the read's second on node B within the grace: %v", err)
			}
			if err := verify(t, nodeB, "GET", "/open/v1/channel/users/2?channel_user_id=x", "", ts); err != nil {
				t.Errorf("another read of the same second within the grace: %v", err)
			}
			// Past the grace: every other route is refused on both nodes.
			now = start.Add(auth.BindingGrace + time.Millisecond)
			for _, c := range []struct{ method, target string }{
				{"DELETE", "/open/v1/channel/users/1/family-groups/1"},
				{"PATCH", "/open/v1/channel/users/1"},
				{"GET", "/open/v1/channel/users/3"},
				{"DELETE", del + "?x=1"},
			} {
				for _, n := range []auth.SchemeM{nodeA, nodeB} {
					if err := verify(t, n, c.method, c.target, "", ts); !errors.Is(err, httpapi.ErrUnauthorized) {
						t.Errorf("%s %s past the grace: %v, want ErrUnauthorized", c.method, c.target, err)
					}
				}
			}
			// The routes accepted so far keep passing identical retries, on both nodes.
			now = start.Add(auth.Window - 10*time.Second)
			for _, n := range []auth.SchemeM{nodeA, nodeB} {
				for _, c := range []struct{ method, target string }{{"GET", read}, {"DELETE", del}, {"GET", "/open/v1/channel/users/2?channel_user_id=x"}} {
					if err := verify(t, n, c.method, c.target, "", ts); err != nil {
						t.Errorf("identical retry of %s %s: %v", c.method, c.target, err)
					}
				}
			}
			// A route refused once stays refused.
			if err := verify(t, nodeA, "PATCH", "/open/v1/channel/users/1", "", ts); !errors.Is(err, httpapi.ErrUnauthorized) {
				t.Errorf("a refused route again: %v", err)
			}
			// Another timestamp is another signature, free for another route.
			if err := verify(t, nodeB, "DELETE", "/open/v1/channel/users/1/family-groups/1", "", ts-1); err != nil {
				t.Errorf("another signature: %v", err)
			}
			// A body makes another signature too, bound to its own route.
			body := `{"app_group_id":1,"name":"a"}`
			if err := verify(t, nodeB, "POST", "/open/v1/channel/users/1/family-groups", body, ts); err != nil {
				t.Errorf("POST with a body: %v", err)
			}
			now = now.Add(auth.BindingGrace + time.Millisecond)
			if err := verify(t, nodeA, "POST", "/open/v1/channel/users/2/family-groups", body, ts); !errors.Is(err, httpapi.ErrUnauthorized) {
				t.Errorf("the body on another user past the grace: %v, want ErrUnauthorized", err)
			}
		})
	}
}

// stallingApps is a directory whose lookup takes the node's clock forward
// by stall, as a lookup that waits for Postgres on a starved node does.
type stallingApps struct {
	apps
	stall   *time.Duration
	advance func(time.Duration)
}

func (d stallingApps) ByID(id int64) (domain.App, bool) {
	d.advance(*d.stall)
	return d.apps.ByID(id)
}

// schemeMNode is a node's partner edge as far as scheme M goes: the
// failure limiter (which stamps arrivals) on clock, then s's check,
// recording the binding at once or, with later, after the check
// (VerifyLater, the snapshot read's path). send makes a bodyless request
// of app 9 signed at second ts and returns its status (401 when refused).
func schemeMNode(s auth.SchemeM, clock func() time.Time, later bool, ts int64) (send func(method, target string) int) {
	failures := auth.NewFailures()
	failures.Now = clock
	node := failures.Install(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if later {
			var p *auth.PendingBinding
			if _, p, err = s.VerifyLater(r, nil); err == nil && p != nil {
				err = p.Record()
			}
		} else {
			_, err = s.Verify(r, nil)
		}
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	sec := strconv.FormatInt(ts, 10)
	return func(method, target string) int {
		r := httptest.NewRequest(method, target, nil)
		r.Header.Set("X-App-Id", "9")
		r.Header.Set("X-Timestamp", sec)
		r.Header.Set("X-Signature", auth.SignM(bound.AppKey, sec, bound.AppSecret, nil))
		w := httptest.NewRecorder()
		node.ServeHTTP(w, r)
		return w.Code
	}
}

// The grace counts from when each request reached the node, not from when
// the node got round to checking it: a partner's second route of a second,
// arriving within the grace, passes however long the node then stalls
// before its check (here a directory lookup longer than the grace, as a
// restarted node on a loaded machine showed); a route arriving after the
// grace is refused, stall or not. Both through Verify and through a
// binding recorded later (VerifyLater).
func TestBindingGraceCountsFromArrivalNotFromTheCheck(t *testing.T) {
	for _, later := range []bool{false, true} {
		start := time.Unix(time.Now().Unix(), 0)
		now, stall := start, time.Duration(0)
		clock := func() time.Time { return now }
		dir := stallingApps{apps: apps{9: bound}, stall: &stall, advance: func(d time.Duration) { now = now.Add(d) }}
		send := schemeMNode(auth.SchemeM{Apps: dir, Now: clock, Bindings: memory.New()}, clock, later, start.Unix())

		if got := send("GET", "/open/v1/channel/users/1"); got != http.StatusOK {
			t.Fatalf("later=%v: first use: %d", later, got)
		}
		// Arrives within the grace; its check comes a whole grace later.
		now, stall = start.Add(auth.BindingGrace/2), auth.BindingGrace
		if got := send("DELETE", "/open/v1/channel/users/1/family-members/1"); got != http.StatusOK {
			t.Errorf("later=%v: a route that arrived within the grace, checked after a stall past it: %d, want 200", later, got)
		}
		// Arrives after the grace: refused, with or without a stall.
		for _, st := range []time.Duration{0, auth.BindingGrace} {
			now, stall = start.Add(auth.BindingGrace+100*time.Millisecond), st
			if got := send("GET", "/open/v1/channel/users/2"); got != http.StatusUnauthorized {
				t.Errorf("later=%v: a route that arrived after the grace (stall %v): %d, want 401", later, st, got)
			}
		}
		// The route let in keeps passing its identical retries.
		now, stall = start.Add(auth.Window-10*time.Second), 0
		if got := send("DELETE", "/open/v1/channel/users/1/family-members/1"); got != http.StatusOK {
			t.Errorf("later=%v: identical retry of the route let in: %d", later, got)
		}
	}
}

// A spec-faithful partner reads two resources in one second, so both
// requests carry one signature; the second is sent at the end of the
// second and its connection's SYN is lost once or twice, so TCP sends it
// again after 1 s and then 2 s more (RFC 6298's initial retransmission
// timeout, doubled). Both reads pass; the same headers arriving later
// than any such delay are still refused.
func TestSchemeMReadsOfOneSecondPassAfterLostSYNs(t *testing.T) {
	start := time.Unix(time.Now().Unix(), 0)
	for _, c := range []struct {
		name   string
		second time.Duration // when the second read reaches the node, after the first
		want   int
	}{
		{"no loss", 950 * time.Millisecond, http.StatusOK},
		{"one lost SYN", 950*time.Millisecond + time.Second + 100*time.Millisecond, http.StatusOK},
		{"two lost SYNs", 950*time.Millisecond + 3*time.Second + 100*time.Millisecond, http.StatusOK},
		{"headers moved to another route later", auth.BindingGrace + 100*time.Millisecond, http.StatusUnauthorized},
	} {
		now := start.Add(50 * time.Millisecond)
		clock := func() time.Time { return now }
		send := schemeMNode(auth.SchemeM{Apps: apps{9: bound}, Now: clock, Bindings: memory.New()}, clock, false, start.Unix())
		if got := send("GET", "/open/v1/channel/users/1"); got != http.StatusOK {
			t.Fatalf("%s: first read: %d", c.name, got)
		}
		now = now.Add(c.second)
		if got := send("GET", "/open/v1/channel/users/0?channel_user_id=c-2"); got != c.want {
			t.Errorf("%s: the second read, %v after the first: %d, want %d", c.name, c.second, got, c.want)
		}
	}
}
