package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/projections"
)

// pullFixture opens n stores (n nodes) on one migrated database holding
// report 5 of app 1, user 7, in the reports read model at position 9.
func pullFixture(t *testing.T, n int) []*Store {
	t.Helper()
	ctx := context.Background()
	url := MigratedDB(t)
	stores := make([]*Store, n)
	for i := range stores {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	at := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	err := stores[0].UpdateReports(ctx, string(projections.ReadModelReports), events.Position{Commit: 9, Prepare: 9}, func(tx projections.ReportTx) error {
		return tx.PutReport(ctx, projections.Report{ReportID: 5, AppID: 1, OpenUserID: 7, UploadedAt: at, UpdatedAt: at, Day: "2026-11-01", RawData: []byte(`{"x":1}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return stores
}

// Concurrent pulls with one nonce, from two pools (two nodes): exactly one
// finds it fresh, takes a token and reads the report; the others spend
// nothing and read nothing. Fresh nonces then take the bucket's tokens one
// each, and once it is empty get no grant and no report; another app's
// report is never read; a report id no app has is not found.
func TestPullReportUsesTheNonceOnceAndTakesOneToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores := pullFixture(t, 2)
	bucket := ratelimit.BucketSpec{Name: "report_pull", Limit: 3, Period: time.Hour}
	query := func(app, id int64, nonce string) projections.ReportPullQuery {
		return projections.ReportPullQuery{AppID: app, ReportID: id, NonceScope: fmt.Sprintf("h:%d", app), Nonce: nonce,
			NonceExpires: time.Now().Add(time.Minute), Take: &ratelimit.Take{Bucket: bucket, Key: fmt.Sprint(app), Want: 1}}
	}
	const n = 8
	var wg sync.WaitGroup
	results := make([]projections.ReportPull, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = stores[i%2].PullReport(ctx, query(1, 5, "dup"))
		}()
	}
	wg.Wait()
	fresh := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Fresh {
			fresh++
			if r.Grant.Granted != 1 || !r.Found || r.Report.OpenUserID != 7 || string(r.Report.RawData) != `{"x":1}` || r.Checkpoint != (events.Position{Commit: 9, Prepare: 9}) {
				t.Errorf("the fresh pull: %+v", r)
			}
		} else if r.Grant.Granted != 0 || r.Found {
			t.Errorf("a replay took a token or read the report: %+v", r)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d pulls found the nonce fresh, want 1", fresh)
	}
	for i, c := range []struct {
		app, id        int64
		granted, found bool
	}{
		{2, 5, true, false}, // another app's bucket, not its report
		{1, 6, true, false}, // no such report
		{1, 5, true, true},  // the bucket's last token
		{1, 5, false, false},
	} {
		r, err := stores[0].PullReport(ctx, query(c.app, c.id, fmt.Sprintf("n-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Fresh || (r.Grant.Granted == 1) != c.granted || r.Found != c.found || (!c.found && r.Report.ReportID != 0) {
			t.Errorf("case %d: %+v", i, r)
		}
	}
}

// A pull admitted from the node's lease (no take) uses its nonce once and
// reads the report when the nonce was fresh, without a row of the bucket:
// the app's bucket is neither made nor updated, whatever the pulls.
func TestPullReportFromALeaseLeavesTheBucketAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pullFixture(t, 1)[0]
	query := func(app, id int64, nonce string) projections.ReportPullQuery {
		return projections.ReportPullQuery{AppID: app, ReportID: id, NonceScope: fmt.Sprintf("h:%d", app), Nonce: nonce,
			NonceExpires: time.Now().Add(time.Minute)}
	}
	for i, c := range []struct {
		app, id      int64
		nonce        string
		fresh, found bool
	}{
		{1, 5, "a", true, true},
		{1, 5, "a", false, false}, // a replay reads nothing
		{2, 5, "b", true, false},  // another app's report
		{1, 6, "c", true, false},  // no such report
		{1, 5, "d", true, true},
	} {
		r, err := s.PullReport(ctx, query(c.app, c.id, c.nonce))
		if err != nil {
			t.Fatal(err)
		}
		if r.Fresh != c.fresh || r.Found != c.found || r.Grant != (ratelimit.Grant{}) || (c.found && (r.Report.OpenUserID != 7 || string(r.Report.RawData) != `{"x":1}`)) ||
			r.Checkpoint != (events.Position{Commit: 9, Prepare: 9}) {
			t.Errorf("case %d: %+v", i, r)
		}
	}
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM rate_buckets`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d bucket rows after pulls admitted from a lease, want none", rows)
	}
	if text := pullQuery("NULL::bigint", false); strings.Contains(text, "rate_buckets") || strings.Contains(text, "$8") {
		t.Fatalf("the statement without a take still takes, or still numbers the take's parameters:\n%s", text)
	}
}
