package queryapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// A signed snapshot on Postgres costs one round trip even when its app's
// rate-limit lease must be renewed (an app calling less often than the
// lease lasts renews on every call): the renewal rides the snapshot's own
// statement. The limit still holds across two nodes sharing the bucket:
// with the bucket's clock stopped, the two nodes together admit exactly
// the limit, then both answer the spec's HTTP_429 with its headers, each
// refusal in one round trip too.
func TestSnapshotCarriesTheLeaseRenewalInItsRoundTrip(t *testing.T) {
	rt, es, rmA := openCountedStores(t)
	ctx := context.Background()
	rmB, err := postgres.Open(ctx, rmA.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rmB.Close() })
	rmB.SeeHead(pgevents.HeadQuery, pgevents.PositionAt)

	const limit, batch = 40, 10
	stopped := time.Unix(1_900_000_000, 0)
	apps := make([]domain.App, 0, 8)
	for i := range 8 {
		id := int64(7001 + i)
		apps = append(apps, domain.App{AppID: id, Name: "t", AppKey: "key-" + strconv.FormatInt(id, 10),
			AppSecret: "secret-" + strconv.FormatInt(id, 10), Scopes: domain.Scopes, Environment: "production"})
	}
	dir := edgetest.NewDirectory(apps...)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	node := func(rm *postgres.Store) http.Handler {
		bucket := ratelimitpg.New(rm.Pool()).Bucket("scheme_m_take", limit, time.Minute)
		bucket.Now = func() time.Time { return stopped } // no refill while the test runs
		leased := ratelimit.NewLeased(bucket, limit, time.Minute, batch, time.Second)
		marks := projections.NewWatermarks()
		marks.FollowHead(es.Head)
		runner := subscribe.NewRunner(es, catalog.Registry(), &follower{name: string(projections.ReadModelUsers)}, log, nil)
		api := &API{
			Store: rm, Events: es, ReadModelRunners: map[projections.ReadModel]*subscribe.Runner{projections.ReadModelUsers: runner},
			SchemeM:       auth.SchemeM{Apps: dir, Now: time.Now, Bindings: rm, Limiter: leased},
			SnapshotTakes: true, Watermarks: marks, Location: time.UTC,
		}
		return router(api.Routes())
	}
	a, b := node(rmA), node(rmB)
	get := func(h http.Handler, app domain.App, n int) (reply, int64) {
		t.Helper()
		// Each call of an app signs another second, so that its signature
		// is new and its statement records the binding.
		req := httptest.NewRequest("GET", "/open/v1/channel/users/404", nil)
		ts := strconv.FormatInt(time.Now().Unix()-int64(n), 10)
		req.Header.Set("X-App-Id", strconv.FormatInt(app.AppID, 10))
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", auth.SignM(app.AppKey, ts, app.AppSecret, nil))
		before := rt.count.Load()
		r := edgetest.Serve(t, h, req)
		return r, rt.count.Load() - before
	}
	// The first snapshot prepares the statements on the pool's connection.
	if r, _ := get(a, apps[7], 0); r.Status != http.StatusNotFound {
		t.Fatalf("warm-up: %d %s", r.Status, r.Raw)
	}
	// Apps seen for the first time: each snapshot takes a new lease.
	for i, app := range apps[:6] {
		r, trips := get(a, app, 1)
		expect(t, "first snapshot of an app", r, http.StatusNotFound, "USER_NOT_FOUND")
		if trips != 1 {
			t.Errorf("app %d's first snapshot (a lease renewal): %d round trips to Postgres, want 1", i, trips)
		}
	}
	// One app over both nodes: A and B take turns.
	app, admitted := apps[0], 1
	for n := 2; n < 3*limit; n++ {
		h := b
		if n%2 == 0 {
			h = a
		}
		r, trips := get(h, app, n)
		if h == a && trips != 1 {
			t.Errorf("call %d on node A: %d round trips to Postgres, want 1", n, trips)
		}
		if r.Status == http.StatusTooManyRequests {
			expect(t, "over the limit", r, http.StatusTooManyRequests, "HTTP_429")
			if r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) ||
				r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") == "" {
				t.Fatalf("429 headers: %v", r.Header)
			}
			continue
		}
		expect(t, "within the limit, call "+strconv.Itoa(n), r, http.StatusNotFound, "USER_NOT_FOUND")
		admitted++
	}
	if admitted != limit {
		t.Fatalf("%d snapshots admitted over two nodes, want exactly the limit of %d", admitted, limit)
	}
}
