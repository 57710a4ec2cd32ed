package queryapi

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/internal/ratelimit/ratelimittest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// roundTrips is a TCP proxy in front of Postgres that counts the round
// trips its clients make: each Sync of the extended protocol, and each
// simple Query, that ends a group of messages in which a statement was
// executed. A group that only prepares statements (pgx's first use of a
// statement on a connection) is not counted: the pool pays it once per
// connection, not per request.
type roundTrips struct {
	ln    net.Listener
	count atomic.Int64
	wg    sync.WaitGroup
}

func newRoundTrips(t *testing.T, dbURL string) (*roundTrips, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt := &roundTrips{ln: ln}
	target := u.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			rt.wg.Add(2)
			go func() { defer rt.wg.Done(); _, _ = io.Copy(c, s); c.Close() }()
			go func() { defer rt.wg.Done(); rt.frontend(c, s); s.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	u.Host = ln.Addr().String()
	return rt, u.String()
}

// frontend forwards the client's messages, counting executed groups.
func (rt *roundTrips) frontend(c, s net.Conn) {
	var head [5]byte
	// The startup message has no type byte.
	if _, err := io.ReadFull(c, head[:4]); err != nil {
		return
	}
	n := int(binary.BigEndian.Uint32(head[:4]))
	rest := make([]byte, n-4)
	if _, err := io.ReadFull(c, rest); err != nil {
		return
	}
	if _, err := s.Write(append(head[:4:4], rest...)); err != nil {
		return
	}
	executed := false
	for {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[1:]))
		body := make([]byte, n-4)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		switch head[0] {
		case 'E':
			executed = true
		case 'Q':
			rt.count.Add(1)
		case 'S':
			if executed {
				rt.count.Add(1)
			}
			executed = false
		}
		if _, err := s.Write(append(head[:], body...)); err != nil {
			return
		}
	}
}

// A report pull on Postgres costs one round trip, whatever its outcome:
// the nonce's use, the rate-limit decision, the reports read model's
// checkpoint and the log's head, and the report, in one statement; a
// replay spends no token and a refused pull reads no report. The pull's
// audit fact (and the first pull's is_viewed mark) are the write side's
// appends, through their own ports.
func TestReportPullCostsOneRoundTripOnPostgres(t *testing.T) {
	rt, es, rm := openCountedStores(t)

	reg := catalog.Registry()
	appA, _ := seedPulledReport(t, es, rm)
	marks := projections.NewWatermarks()
	marks.FollowHead(es.Head)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The runner is never started: only the checkpoint read with the
	// report can show that the read model has applied the head.
	runner := subscribe.NewRunner(es, reg, &follower{name: string(projections.ReadModelReports)}, log, nil)
	dir := edgetest.NewDirectory(appA)
	auditor, views := &fakeAuditor{}, &fakeViews{}
	api := &ReportAPI{
		Reports: rm, Events: es, Runner: runner, SchemeH: auth.SchemeH{Apps: dir, Nonces: rm, Now: time.Now},
		Limiter: ratelimit.NewLeased(ratelimitpg.New(rm.Pool()).Bucket("report_pull", 3, time.Minute), 3, time.Minute, 1, time.Minute), Views: views, Apps: dir,
		Location: time.UTC, Now: fixedNow, Watermarks: marks, Auditor: auditor, OneTrip: rm,
	}
	handler := router(api.Routes())
	pull := func(path, nonce string) (reply, int64) {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		schemeHAt(appA, nonce, time.Now())(req, nil)
		before := rt.count.Load()
		r := edgetest.Serve(t, handler, req)
		return r, rt.count.Load() - before
	}
	// The first pull prepares the statements on the pool's connection.
	if r, _ := pull("/open/v1/health-reports/22", "warm-up"); r.Status != http.StatusNotFound {
		t.Fatalf("warm-up: %d %s", r.Status, r.Raw)
	}
	for _, c := range []struct {
		what, path, nonce string
		status            int
		remaining         string
	}{
		{"pull", "/open/v1/health-reports/21", "n-1", http.StatusOK, "1"},
		{"replayed nonce", "/open/v1/health-reports/21", "n-1", http.StatusUnauthorized, ""},
		{"missing report", "/open/v1/health-reports/23", "n-2", http.StatusNotFound, "0"},
		{"over the limit", "/open/v1/health-reports/21", "n-3", http.StatusTooManyRequests, "0"},
	} {
		r, trips := pull(c.path, c.nonce)
		if r.Status != c.status || r.Header.Get("X-RateLimit-Remaining") != c.remaining {
			t.Fatalf("%s: %d remaining %q %s", c.what, r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Raw)
		}
		if trips != 1 {
			t.Errorf("%s: %d round trips to Postgres, want 1", c.what, trips)
		}
		if c.status == http.StatusOK && !strings.Contains(string(r.Raw), `"raw_data":{"a":1}`) {
			t.Errorf("%s: %s", c.what, r.Raw)
		}
	}
	if len(auditor.facts) != 1 || auditor.facts[0].ReportID != 21 || len(views.viewed) != 0 {
		t.Fatalf("audit facts %+v, viewed %v: want one fact of report 21, no new mark", auditor.facts, views.viewed)
	}
}

// seedPulledReport appends one earlier report-pull audit fact and puts
// report 21 of app 9001 (returned with that position) in the reports read
// model at that position, as a node that has applied the head holds it.
func seedPulledReport(tb testing.TB, es *pgevents.Store, rm *postgres.Store) (domain.App, events.Position) {
	tb.Helper()
	ctx := context.Background()
	prop, err := catalog.Registry().Encode(catalog.AccessAudited{Actor: "op:1", Action: catalog.AuditReportPull, AppID: 9001, ReportID: 21, At: testNow}, events.Metadata{})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := es.Append(ctx, "audit-op:1", events.Any(), prop)
	if err != nil {
		tb.Fatal(err)
	}
	app := domain.App{AppID: 9001, Name: "a", AppKey: "key-a", AppSecret: "secret-a", Scopes: domain.Scopes, Environment: "production"}
	err = rm.UpdateReports(ctx, string(projections.ReadModelReports), res.Position, func(tx projections.ReportTx) error {
		return tx.PutReport(ctx, projections.Report{ReportID: 21, AppID: app.AppID, OpenUserID: 11, IsViewed: true,
			UploadedAt: testNow, UpdatedAt: testNow, Day: "2026-01-01", RawData: []byte(`{"a":1}`)})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return app, res.Position
}

// openCountedStores opens the event store and the read models (one
// connection, so the warm-up prepares its statements) on a fresh database
// behind the round-trip counter.
func openCountedStores(t *testing.T) (*roundTrips, *pgevents.Store, *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	rt, proxied := newRoundTrips(t, pgtest.New(t))
	es, err := pgevents.Open(ctx, proxied)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	rm, err := postgres.Open(ctx, proxied+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rm.Close() })
	rm.SeeHead(pgevents.HeadQuery, pgevents.PositionAt)
	return rt, es, rm
}

// Two nodes admitting an app's pulls from leases of its shared bucket
// (eight tokens a lease; the clock stopped, so the bucket does not refill)
// answer exactly the limit between them, each pull one round trip whether
// its node's lease served it or its statement carried the renewal; a
// replayed nonce, on either node and whichever way it was admitted, spends
// no token; once the bucket and the leases are spent both nodes answer 429
// with the limit's headers and read no report.
func TestLeasedReportPullsAdmitExactlyTheLimitAcrossNodes(t *testing.T) {
	rt, es, rm := openCountedStores(t)
	appA, _ := seedPulledReport(t, es, rm)
	marks := projections.NewWatermarks()
	marks.FollowHead(es.Head)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	runner := subscribe.NewRunner(es, catalog.Registry(), &follower{name: string(projections.ReadModelReports)}, log, nil)
	dir := edgetest.NewDirectory(appA)
	clock := ratelimittest.NewClock()
	const limit, batch = 40, 8
	auditor := &fakeAuditor{}
	node := func() http.Handler {
		bucket := ratelimitpg.New(rm.Pool()).Bucket("report_pull", limit, time.Minute)
		bucket.Now = clock.Now
		leases := ratelimit.NewLeased(bucket, limit, time.Minute, batch, time.Minute)
		leases.Now = clock.Now
		api := &ReportAPI{
			Reports: rm, Events: es, Runner: runner, SchemeH: auth.SchemeH{Apps: dir, Nonces: rm, Now: time.Now},
			Limiter: leases, Views: &fakeViews{}, Apps: dir,
			Location: time.UTC, Now: fixedNow, Watermarks: marks, Auditor: auditor, OneTrip: rm,
		}
		return router(api.Routes())
	}
	nodes := []http.Handler{node(), node()}
	pull := func(on int, nonce string) (reply, int64) {
		t.Helper()
		const path = "/open/v1/health-reports/21"
		req := httptest.NewRequest("GET", path, nil)
		schemeHAt(appA, nonce, time.Now())(req, nil)
		before := rt.count.Load()
		r := edgetest.Serve(t, nodes[on], req)
		return r, rt.count.Load() - before
	}
	// Until both nodes refused twice in a row: then their leases and the
	// bucket are spent (the clock does not move).
	admitted, refusedInARow := 0, 0
	for i := 0; refusedInARow < 4 && i < 200; i++ {
		on := i % 2
		r, trips := pull(on, "n-"+strconv.Itoa(i))
		if trips != 1 {
			t.Errorf("pull %d on node %d: %d round trips to Postgres, want 1", i, on, trips)
		}
		switch r.Status {
		case http.StatusOK:
			admitted, refusedInARow = admitted+1, 0
			if !strings.Contains(string(r.Raw), `"raw_data":{"a":1}`) {
				t.Fatalf("pull %d: %s", i, r.Raw)
			}
		case http.StatusTooManyRequests:
			refusedInARow++
			if r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) || r.Header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("pull %d refused without the limit's headers: %v", i, r.Header)
			}
			if strings.Contains(string(r.Raw), "raw_data") {
				t.Fatalf("a refused pull carried the report: %s", r.Raw)
			}
		default:
			t.Fatalf("pull %d on node %d: %d %s", i, on, r.Status, r.Raw)
		}
		if i%3 == 0 {
			// The same nonce again, on the other node: a replay, which
			// must spend nothing (nor carry the report).
			if r, _ := pull(1-on, "n-"+strconv.Itoa(i)); r.Status != http.StatusUnauthorized || strings.Contains(string(r.Raw), "raw_data") {
				t.Fatalf("replay of pull %d: %d %s", i, r.Status, r.Raw)
			}
		}
	}
	if admitted != limit {
		t.Fatalf("%d pulls admitted by two leasing nodes, want exactly the limit of %d", admitted, limit)
	}
	if len(auditor.facts) != limit {
		t.Fatalf("%d audit facts for %d answered pulls", len(auditor.facts), limit)
	}
}
