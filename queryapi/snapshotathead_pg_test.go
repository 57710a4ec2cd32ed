package queryapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/projections"
)

// laggingApps is an app directory that follows a log: held is what this
// node has applied, head what another node acknowledged. Every hit is
// handed out unconfirmed (auth.DeferredDirectory); a head read of its own
// or a confirmation at a statement's head brings held up to head.
type laggingApps struct {
	mu             sync.Mutex
	held, head     domain.App
	own, confirmed int
}

func (d *laggingApps) ByID(id int64) (domain.App, bool) { a, ok, _ := d.ByIDChecked(id); return a, ok }
func (d *laggingApps) ByKey(string) (domain.App, bool)  { return domain.App{}, false }
func (d *laggingApps) ByKeyChecked(string) (domain.App, bool, error) {
	return domain.App{}, false, nil
}
func (d *laggingApps) ByIDChecked(id int64) (domain.App, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.own++
	d.held = d.head
	return d.held, id == d.held.AppID, nil
}
func (d *laggingApps) ByIDDeferred(id int64) (domain.App, bool, bool, error) {
	a, ok := d.ByIDHeld(id)
	return a, ok, false, nil
}
func (d *laggingApps) ByIDHeld(id int64) (domain.App, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held, id == d.held.AppID
}
func (d *laggingApps) ConfirmAt(events.Position, time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.confirmed++
	d.held = d.head
	return nil
}
func (d *laggingApps) Confirm(time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.own++
	d.held = d.head
	return nil
}
func (d *laggingApps) set(head domain.App) { d.mu.Lock(); d.head = head; d.mu.Unlock() }
func (d *laggingApps) counts() (own, confirmed int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.own, d.confirmed
}

// A signed snapshot read on Postgres confirms its app at the head its own
// statement reads: one round trip, no head read of the directory's own.
// A change another node acknowledged decides the read though this node
// has not applied it: a suspension is answered 403 with no snapshot, also
// when the app is over its rate (403 before 429, as Verify orders them),
// and a resume lets the next read through.
func TestSnapshotConfirmsItsAppAtItsStatementsHead(t *testing.T) {
	rt, es, rm := openCountedStores(t)
	app := domain.App{AppID: 7101, Name: "t", AppKey: "key-7101", AppSecret: "secret-7101", Scopes: domain.Scopes, Environment: "production"}
	suspended := app
	suspended.Suspended = true
	dir := &laggingApps{held: app, head: app}
	const limit = 5
	stopped := time.Unix(1_900_000_000, 0)
	bucket := ratelimitpg.New(rm.Pool()).Bucket("scheme_m_at_head", limit, time.Minute)
	bucket.Now = func() time.Time { return stopped } // no refill while the test runs
	marks := projections.NewWatermarks()
	marks.FollowHead(es.Head)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	runner := subscribe.NewRunner(es, catalog.Registry(), &follower{name: string(projections.ReadModelUsers)}, log, nil)
	api := &API{
		Store: rm, Events: es, ReadModelRunners: map[projections.ReadModel]*subscribe.Runner{projections.ReadModelUsers: runner},
		SchemeM: auth.SchemeM{Apps: dir, Now: time.Now, Bindings: rm,
			Limiter: ratelimit.NewLeased(bucket, limit, time.Minute, 1, time.Second)},
		SnapshotTakes: true, Watermarks: marks, Location: time.UTC,
	}
	h := router(api.Routes())
	n := 0
	get := func() (reply, int64) {
		t.Helper()
		n++ // each read signs another second: a new signature
		req := httptest.NewRequest("GET", "/open/v1/channel/users/404", nil)
		ts := strconv.FormatInt(time.Now().Unix()-int64(n), 10)
		req.Header.Set("X-App-Id", strconv.FormatInt(app.AppID, 10))
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", auth.SignM(app.AppKey, ts, app.AppSecret, nil))
		before := rt.count.Load()
		r := edgetest.Serve(t, h, req)
		return r, rt.count.Load() - before
	}
	r, _ := get() // prepares the statements
	expect(t, "warm-up", r, http.StatusNotFound, "USER_NOT_FOUND")

	r, trips := get()
	expect(t, "a read of an unchanged app", r, http.StatusNotFound, "USER_NOT_FOUND")
	if own, confirmed := dir.counts(); own != 0 || confirmed != 2 || trips != 1 {
		t.Fatalf("%d head reads of the directory's own, %d confirmations at the statement's head, %d round trips; want 0, 2, 1", own, confirmed, trips)
	}

	dir.set(suspended)
	r, _ = get()
	expect(t, "suspended through another node", r, http.StatusForbidden, "APP_SUSPENDED")
	dir.set(app)
	r, _ = get()
	expect(t, "resumed through another node", r, http.StatusNotFound, "USER_NOT_FOUND")

	// Over the rate, a suspension this node has not applied is still the
	// answer (a refusal the lease decides sends no statement, and is
	// confirmed with a head read of the directory's own).
	for r.Status != http.StatusTooManyRequests {
		if n > 10*limit {
			t.Fatalf("no 429 after %d reads: %d %s", n, r.Status, r.Raw)
		}
		r, _ = get()
	}
	dir.set(suspended)
	r, _ = get()
	expect(t, "suspended and over the rate", r, http.StatusForbidden, "APP_SUSPENDED")
}
