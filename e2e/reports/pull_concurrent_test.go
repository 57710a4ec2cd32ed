package reports_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// Concurrent pulls of one report: of pulls sent at once with one nonce
// exactly one is answered and the others are 401; pulls with their own
// nonces are all answered. Every answered pull has its audit fact in the
// app's audit stream (its request id, its report, the user and the app as
// subjects), durable when the answer arrives, and the refused ones append
// nothing: embedded, with Postgres read models, and with the log in
// Postgres too (where the pull is one statement and its fact one append).
func TestConcurrentReportPullsAreEachAudited(t *testing.T) {
	t.Parallel()
	configs := map[string]func(t *testing.T) node.Config{
		"embedded": func(t *testing.T) node.Config {
			return node.Config{DataDir: t.TempDir(), ReportPullLimit: 1000}
		},
		"read models": func(t *testing.T) node.Config {
			return node.Config{DataDir: t.TempDir(), PostgresURL: harness.NodeDB(t), ReportPullLimit: 1000}
		},
		"log and read models": func(t *testing.T) node.Config {
			db := harness.NodeDB(t)
			return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, ReportPullLimit: 1000}
		},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := harness.Start(t, cfg(t))
			a := p.CreateApp("partner")
			created := uploadReport(t, p, a)
			path := "/open/v1/health-reports/" + strconv.FormatInt(created.ID, 10)
			// The first pull marks the report viewed; the pulls below append
			// their audit facts only.
			if r := a.Pull(created.ID); r.Status != http.StatusOK {
				t.Fatalf("first pull: %d %s", r.Status, r.Raw)
			}
			before := p.EventCount()
			facts := func() map[string]string {
				t.Helper()
				recs, err := p.Node.Events.ReadStream(t.Context(), domain.AuditStream("app:"+strconv.FormatInt(a.ID, 10)), 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]string{}
				for _, rec := range recs {
					out[string(rec.Meta)] = string(rec.Data)
				}
				return out
			}
			already := len(facts())

			const same, fresh = 8, 16
			var mu sync.Mutex
			var answered []string // request ids
			refused := 0
			var wg sync.WaitGroup
			nonce, now := harness.FreshNonce(), time.Now()
			for i := range same + fresh {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := nonce
					if i >= same {
						n = harness.FreshNonce()
					}
					r := p.Send(a.RequestH("GET", path, nil, n, now))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case r.Status == http.StatusOK:
						answered = append(answered, r.Header.Get("X-Request-Id"))
					case r.Status == http.StatusUnauthorized && r.Code() == "INVALID_SIGNATURE" && i < same:
						refused++
					default:
						t.Errorf("pull %d: %d %s", i, r.Status, r.Raw)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			if len(answered) != 1+fresh || refused != same-1 {
				t.Fatalf("%d answered, %d refused: want one of the %d same-nonce pulls and all %d fresh ones answered", len(answered), refused, same, fresh)
			}
			// Each answered pull's fact is in the log when its answer
			// arrived; the refused pulls appended nothing.
			if n := p.EventCount() - before; n != len(answered) {
				t.Fatalf("%d events appended for %d answered pulls", n, len(answered))
			}
			got := facts()
			if len(got)-already != len(answered) {
				t.Fatalf("%d new audit facts for %d answered pulls", len(got)-already, len(answered))
			}
			subjects := []string{domain.ReportStream(created.ID), domain.UserStream(created.User), domain.AppStream(a.ID)}
			for _, id := range answered {
				found := false
				for meta, data := range got {
					if id == "" || !strings.Contains(meta, id) {
						continue
					}
					found = true
					if !strings.Contains(data, `"report_id":`+strconv.FormatInt(created.ID, 10)) {
						t.Errorf("the fact of pull %s: %s", id, data)
					}
					for _, s := range subjects {
						if !strings.Contains(data, `"`+s+`"`) {
							t.Errorf("the fact of pull %s lacks subject %s: %s", id, s, data)
						}
					}
				}
				if !found {
					t.Errorf("no audit fact of the answered pull %q", id)
				}
			}
		})
	}
}
