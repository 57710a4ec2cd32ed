package reports_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// On Postgres a pull is one round trip (nonce, rate limit, head, report);
// what a partner observes is the embedded node's: a report pulled right
// after its upload is there, a replayed nonce or request is 401 and a pull
// over the limit 429, neither spending the other's budget nor appending a
// fact. Both with the embedded log (the head from this node's writes) and
// with the log in the same database (the head read in the pull's statement).
func TestReportPullOnPostgres(t *testing.T) {
	t.Parallel()
	configs := map[string]func(t *testing.T) node.Config{
		"read models": func(t *testing.T) node.Config {
			return node.Config{DataDir: t.TempDir(), PostgresURL: harness.NodeDB(t), ReportPullLimit: 4}
		},
		"log and read models": func(t *testing.T) node.Config {
			db := harness.NodeDB(t)
			return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, ReportPullLimit: 4}
		},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := harness.Start(t, cfg(t))
			a := p.CreateApp("partner")
			b := p.CreateApp("other")
			created := uploadReport(t, p, a)
			path := "/open/v1/health-reports/" + strconv.FormatInt(created.ID, 10)

			// Read your writes: the upload's 2xx, then the pull finds it.
			nonce := harness.FreshNonce()
			first := p.Send(a.RequestH("GET", path, nil, nonce, time.Now()))
			if first.Status != http.StatusOK || first.Header.Get("X-RateLimit-Remaining") != "3" {
				t.Fatalf("first pull: %d remaining %q %s", first.Status, first.Header.Get("X-RateLimit-Remaining"), first.Raw)
			}
			var data struct {
				ID       int64 `json:"id"`
				IsViewed bool  `json:"is_viewed"`
			}
			first.Data(t, &data)
			if data.ID != created.ID || data.IsViewed {
				t.Fatalf("first pull data %s", first.Env.Data)
			}

			// Replays: refused before the rate limit, so no token spent,
			// and nothing appended.
			before := p.EventCount()
			if r := p.Send(a.RequestH("GET", path, nil, nonce, time.Now())); r.Status != http.StatusUnauthorized || r.Code() != "INVALID_SIGNATURE" {
				t.Fatalf("nonce replay: %d %s", r.Status, r.Raw)
			}
			now := time.Now()
			if r := p.Send(a.RequestH("GET", path, nil, "", now)); r.Status != http.StatusOK || r.Header.Get("X-RateLimit-Remaining") != "2" {
				t.Fatalf("pull without nonce: %d remaining %q %s", r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Raw)
			}
			afterOK := p.EventCount()
			if afterOK <= before {
				t.Fatalf("an answered pull appended no audit fact (%d events, then %d)", before, afterOK)
			}
			if r := p.Send(a.RequestH("GET", path, nil, "", now)); r.Status != http.StatusUnauthorized || r.Code() != "INVALID_SIGNATURE" {
				t.Fatalf("replayed request without nonce: %d %s", r.Status, r.Raw)
			}
			if n := p.EventCount(); n != afterOK {
				t.Fatalf("a replayed pull appended %d events", n-afterOK)
			}

			// is_viewed after the first pull; the limit counts only what it admitted.
			var again struct {
				IsViewed bool `json:"is_viewed"`
			}
			r := a.Pull(created.ID)
			r.Data(t, &again)
			if r.Status != http.StatusOK || !again.IsViewed || r.Header.Get("X-RateLimit-Remaining") != "1" {
				t.Fatalf("third pull: %d remaining %q %s", r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Raw)
			}
			if r := a.Pull(created.ID + 1000); r.Status != http.StatusNotFound || r.Env.Code != nil || r.Header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("missing report: %d remaining %q %s", r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Raw)
			}
			full := p.EventCount()
			over := a.Pull(created.ID)
			if over.Status != http.StatusTooManyRequests || over.Env.Code != nil || over.Header.Get("Retry-After") == "" || over.Header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("over the limit: %d %v %s", over.Status, over.Header, over.Raw)
			}
			if n := p.EventCount(); n != full {
				t.Fatalf("a refused pull appended %d events", n-full)
			}
			// Another app has its own bucket, and its own reports only.
			if r := b.Pull(created.ID); r.Status != http.StatusNotFound || r.Header.Get("X-RateLimit-Remaining") != "3" {
				t.Fatalf("another app: %d remaining %q %s", r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Raw)
			}
		})
	}
}
