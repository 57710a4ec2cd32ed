package queryapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/projections"
)

// With the log in the read models' database and the pull's head narrowed
// to the events the reports read model applies, a pull whose read model has
// applied every such event answers in its one round trip however many
// other facts (other pulls' audit facts) the log took meanwhile; an event
// the read model applies beyond its checkpoint still makes the pull wait
// (here, with no runner to catch up, until it answers 503 and Retry-After).
func TestReportPullWaitsOnlyForTheReportsEvents(t *testing.T) {
	rt, es, rm := openCountedStores(t)
	ctx := context.Background()
	types := projections.ReportsProjector(rm, time.UTC).(interface{ Types() []string }).Types()
	rm.SeePullHead(pgevents.HeadOfTypesQuery(types))

	reg := catalog.Registry()
	app, _ := seedPulledReport(t, es, rm)
	appendFact := func(p events.Payload) {
		t.Helper()
		prop, err := reg.Encode(p, events.Metadata{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := es.Append(ctx, "audit-app:9001", events.Any(), prop); err != nil {
			t.Fatal(err)
		}
	}
	// Other pulls' facts, past the read model's checkpoint.
	for range 3 {
		appendFact(catalog.AccessAudited{Actor: "app:9001", Action: catalog.AuditReportPull, AppID: 9001, ReportID: 21, At: testNow})
	}
	marks := projections.NewWatermarks()
	marks.FollowHead(es.Head)
	// The runner is never started: only the checkpoint read with the
	// report can show the read model current.
	runner := subscribe.NewRunner(es, reg, &follower{name: string(projections.ReadModelReports)}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	dir := edgetest.NewDirectory(app)
	auditor := &fakeAuditor{}
	api := &ReportAPI{
		Reports: rm, Events: es, Runner: runner, SchemeH: auth.SchemeH{Apps: dir, Nonces: rm, Now: time.Now},
		Limiter: ratelimit.NewLeased(ratelimitpg.New(rm.Pool()).Bucket("report_pull", 100, time.Minute), 100, time.Minute, 1, time.Minute), Views: &fakeViews{}, Apps: dir,
		Location: time.UTC, Now: fixedNow, Watermarks: marks, Auditor: auditor, OneTrip: rm,
	}
	handler := router(api.Routes())
	pull := func(nonce string) (reply, int64) {
		t.Helper()
		const path = "/open/v1/health-reports/21"
		req := httptest.NewRequest("GET", path, nil)
		schemeHAt(app, nonce, time.Now())(req, nil)
		before := rt.count.Load()
		r := edgetest.Serve(t, handler, req)
		return r, rt.count.Load() - before
	}
	pull("warm-up") // prepares the statements on the pool's connection
	if r, trips := pull("n-1"); r.Status != http.StatusOK || trips != 1 {
		t.Fatalf("pull behind the log's head only by audit facts: %d after %d round trips, want 200 after 1: %s", r.Status, trips, r.Raw)
	}
	if len(auditor.facts) != 2 {
		t.Fatalf("audit facts %+v: want the two answered pulls'", auditor.facts)
	}

	// A report event the read model has not applied: the pull may not
	// answer from its rows.
	appendFact(catalog.ReportViewed{ReportID: 21, AppID: 9001})
	if r, _ := pull("n-2"); r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("pull behind a report event: %d %s, want 503 with Retry-After", r.Status, r.Raw)
	}
	if len(auditor.facts) != 2 {
		t.Fatalf("a pull answered 503 recorded an audit fact: %+v", auditor.facts)
	}
}
