package webhooks_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// bulkResendBacklog is the synthetic backlog of TestBulkResendOfABacklog:
// several calls' worth at the test's cap.
const bulkResendBacklog = 3000

// TestBulkResendOfABacklog: an operator resends an app's backlog of a few
// thousand deliveries (on the embedded store and on Postgres) while single
// resends of some of the same deliveries run at once. Each call examines
// at most the cap and answers next_after to continue; following it to the
// end resends every matched delivery exactly once (one resend event per
// stream, by the operator), the counts of all answers add up to the
// deliveries resent, a delivery about an erased user and deliveries already
// pending are not resent nor counted, and a second pass queues nothing.
func TestBulkResendOfABacklog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) node.Config
	}{
		{"embedded", func(t *testing.T) node.Config { return node.Config{DataDir: t.TempDir()} }},
		{"postgres", func(t *testing.T) node.Config {
			db := harness.NodeDB(t)
			return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg(t)
			cfg.BulkResendCap = 1000
			p := harness.Start(t, cfg)
			ctx := t.Context()
			a := p.CreateApp("backlog")

			// Two users' registrations are recorded as deliveries (the app
			// has no webhook URL: never sent); one user is erased.
			var gone, kept harness.RegisterData
			a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("bulk-gone"), http.StatusCreated, "0").Data(t, &gone)
			a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("bulk-kept"), http.StatusCreated, "0").Data(t, &kept)
			if res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID), map[string]any{"reason": "ticket 11"}); res.Status != http.StatusOK {
				t.Fatalf("erase: %d %s", res.Status, res.Raw)
			}
			// Suspended, the app's pending deliveries wait: the already
			// pending ones below stay pending.
			if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "backlog"}); res.Status != http.StatusOK {
				t.Fatalf("suspend: %d %s", res.Status, res.Raw)
			}
			const pending = 40
			ids := harness.AppendBacklog(t, p, a.ID, bulkResendBacklog, pending)
			if err := p.Node.WaitCaughtUp(ctx); err != nil {
				t.Fatal(err)
			}

			// Single resends of 300 of the backlog's deliveries, from 4
			// clients, while the bulk resend runs.
			var wg sync.WaitGroup
			// A failure below ends the test only after the clients stop:
			// they use the node its cleanup closes.
			defer wg.Wait()
			var mu sync.Mutex
			singles := 0
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < 300; i += 4 {
						res := p.Admin("POST", "/admin/v1/deliveries/"+ids[pending+i*7]+"/resend", nil)
						var out struct {
							Queued bool `json:"queued"`
						}
						if res.Status != http.StatusAccepted {
							t.Errorf("single resend: %d %s", res.Status, res.Raw)
							return
						}
						res.Data(t, &out)
						if out.Queued {
							mu.Lock()
							singles++
							mu.Unlock()
						}
					}
				}()
			}
			began := time.Now()
			bulk, calls := harness.ResendAll(t, p, a.ID)
			t.Logf("bulk resend: %d queued in %d calls, %s", bulk, calls, time.Since(began))
			wg.Wait()
			if calls < 4 {
				t.Fatalf("%d calls resent a backlog of %d at a cap of 1000, want at least 4 (next_after)", calls, bulkResendBacklog)
			}

			// Every delivery that could be resent was, once.
			resends := resendEvents(t, p)
			want := 0
			for _, id := range ids[pending:] {
				want++
				if got := resends[id]; len(got) != 1 {
					t.Fatalf("delivery %s resent %d times, want once", id, len(got))
				}
			}
			for _, id := range ids[:pending] {
				if got := resends[id]; len(got) != 0 {
					t.Fatalf("already pending delivery %s resent %d times", id, len(got))
				}
			}
			for id, by := range resends {
				for _, actor := range by {
					if actor == "" || actor == "dispatcher" {
						t.Fatalf("resend of %s recorded by %q, want the operator", id, actor)
					}
				}
			}
			// The users' deliveries (their registration's): the erased
			// user's are not resent, the kept user's are.
			var erased, users int
			for _, d := range p.AppDeliveries(a.ID) {
				switch {
				case strings.HasPrefix(d.ID, harness.BacklogPrefix):
				case d.Erased:
					erased++
					if len(resends[d.ID]) != 0 {
						t.Fatalf("the erased user's delivery %s was resent", d.ID)
					}
				default:
					users++
					want++
					if len(resends[d.ID]) != 1 {
						t.Fatalf("the kept user's delivery %s resent %d times, want once", d.ID, len(resends[d.ID]))
					}
				}
			}
			if erased == 0 || users == 0 {
				t.Fatalf("%d erased and %d kept user deliveries: the test needs both", erased, users)
			}
			if bulk+singles != want {
				t.Fatalf("bulk queued %d and single resends %d: %d in all, want %d", bulk, singles, bulk+singles, want)
			}
			if singles == 0 || bulk == 0 {
				t.Logf("bulk %d, singles %d: the concurrent resends did not overlap", bulk, singles)
			}
			if err := p.Node.WaitCaughtUp(ctx); err != nil {
				t.Fatal(err)
			}
			if again, _ := harness.ResendAll(t, p, a.ID); again != 0 {
				t.Fatalf("a second pass queued %d, want 0 (all pending)", again)
			}
		})
	}
}

// resendEvents reads the log: the actors of each delivery's resends.
func resendEvents(t *testing.T, p *harness.Platform) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	p.EachDeliveryEvent(func(id string, env events.Envelope) {
		if r, ok := env.Payload.(*catalog.DeliveryResendRequested); ok {
			if r.RequestedBy != env.Metadata.Actor {
				t.Fatalf("resend of %s requested by %q, recorded by %q", id, r.RequestedBy, env.Metadata.Actor)
			}
			out[id] = append(out[id], env.Metadata.Actor)
		}
	})
	return out
}

// TestBulkResendLimit: an operator's limit lowers how many matching
// deliveries one call examines (a sample first), and next_after continues
// from there; without a limit the call goes on to the cap. A limit out of
// range is refused like the delivery log's.
func TestBulkResendLimit(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("limit")
	if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "sample"}); res.Status != http.StatusOK {
		t.Fatalf("suspend: %d %s", res.Status, res.Raw)
	}
	ids := harness.AppendBacklog(t, p, a.ID, 25, 0)
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/admin/v1/apps/%d/deliveries/resend?status=skipped", a.ID)
	var out struct {
		Queued    int    `json:"queued"`
		NextAfter string `json:"next_after"`
	}
	res := p.Admin("POST", path+"&limit=10", nil)
	if res.Status != http.StatusAccepted {
		t.Fatalf("resend with limit: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &out)
	if out.Queued != 10 || out.NextAfter == "" {
		t.Fatalf("limit=10: %+v, want 10 queued and a next_after", out)
	}
	resends := resendEvents(t, p)
	for i, id := range ids {
		if got, want := len(resends[id]), map[bool]int{true: 1, false: 0}[i < 10]; got != want {
			t.Fatalf("delivery %d resent %d times after the first call, want %d", i, got, want)
		}
	}
	res = p.Admin("POST", path+"&after="+out.NextAfter, nil)
	out.NextAfter = ""
	res.Data(t, &out)
	if res.Status != http.StatusAccepted || out.Queued != 15 || out.NextAfter != "" {
		t.Fatalf("continued without limit: %d %+v, want the other 15 and no next_after", res.Status, out)
	}
	if res := p.Admin("POST", path+"&limit=0", nil); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("limit=0: %d %s, want 422", res.Status, res.Raw)
	}
}
