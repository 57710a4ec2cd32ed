package queryapi

import (
	"bytes"
	"context"
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
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// The handler tests drive the read edge through its router against small
// fakes of the read models it consumes. A fake embeds its port's interface
// and implements only the reads the edge makes: a call to anything else
// panics, which a test would show. The read models are keyed by app as
// the real ones are, so a read for another app's resource is not found.
// The read models' runners are real runners over the in-memory event store,
// following a projector that only records how far it got: one left
// unstarted is a read model that is behind.

const adminToken = "admin-token-for-read-tests"

var testNow = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// fakeUsers is the users read model.
type fakeUsers struct {
	projections.UserStore
	users   []projections.User
	groups  map[int64][]projections.Group
	members map[int64][]projections.Member
}

func (f *fakeUsers) User(_ context.Context, appID, id int64) (projections.User, error) {
	for _, u := range f.users {
		if u.AppID == appID && u.OpenUserID == id {
			return u, nil
		}
	}
	return projections.User{}, projections.ErrNotFound
}

func (f *fakeUsers) UserByChannelID(_ context.Context, appID int64, channelUserID string) (projections.User, error) {
	for _, u := range f.users {
		if u.AppID == appID && u.ChannelUserID == channelUserID {
			return u, nil
		}
	}
	return projections.User{}, projections.ErrNotFound
}

func (f *fakeUsers) Groups(_ context.Context, _, id int64) ([]projections.Group, error) {
	return f.groups[id], nil
}

func (f *fakeUsers) Members(_ context.Context, _, id int64, after time.Time) ([]projections.Member, error) {
	var out []projections.Member
	for _, m := range f.members[id] {
		if after.IsZero() || m.UpdatedAt.After(after) {
			out = append(out, m)
		}
	}
	return out, nil
}

// fakeOrders is the orders read model.
type fakeOrders struct {
	projections.OrderStore
	orders []projections.Order
}

func (f *fakeOrders) OrderByCode(_ context.Context, appID int64, code string) (projections.Order, error) {
	for _, o := range f.orders {
		if o.OrderCode == code && (appID == 0 || o.AppID == appID) {
			return o, nil
		}
	}
	return projections.Order{}, projections.ErrNotFound
}

// fakeDeliveries is the deliveries read model: the delivery log and feed.
type fakeDeliveries struct {
	projections.DeliveryStore
	list []projections.Delivery
}

func (f *fakeDeliveries) Delivery(_ context.Context, appID int64, id string) (projections.Delivery, []projections.Attempt, error) {
	for _, d := range f.list {
		if d.DeliveryID == id && (appID == 0 || d.AppID == appID) {
			return d, nil, nil
		}
	}
	return projections.Delivery{}, nil, projections.ErrNotFound
}

func (f *fakeDeliveries) Deliveries(_ context.Context, flt domain.DeliveryFilter) ([]projections.Delivery, error) {
	var out []projections.Delivery
	for _, d := range f.list {
		if (flt.AppID == 0 || d.AppID == flt.AppID) && flt.After.Less(d.Cursor) && len(out) < flt.Limit {
			out = append(out, d)
		}
	}
	return out, nil
}

// fakeReports is the reports read model.
type fakeReports struct {
	projections.ReportStore
	reports []projections.Report
}

func (f *fakeReports) Report(_ context.Context, appID, id int64) (projections.Report, error) {
	for _, r := range f.reports {
		if r.ReportID == id && r.AppID == appID {
			return r, nil
		}
	}
	return projections.Report{}, projections.ErrNotFound
}

// fakeViews records the first pull of each report.
type fakeViews struct {
	mu     sync.Mutex
	viewed []int64
}

func (f *fakeViews) MarkViewed(_ context.Context, _, id int64, _ string) (events.Position, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.viewed = append(f.viewed, id)
	return events.Position{}, nil
}

// fakeLimiter allows allowed pulls, then refuses.
type fakeLimiter struct {
	mu      sync.Mutex
	allowed int
}

func (f *fakeLimiter) Allow(context.Context, string) (ratelimit.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.allowed <= 0 {
		return ratelimit.Decision{Limit: 60, RetryAfter: 2 * time.Second, Reset: time.Minute}, nil
	}
	f.allowed--
	return ratelimit.Decision{Allowed: true, Limit: 60, Remaining: f.allowed, Reset: time.Second}, nil
}

// fakeAuditor records the audit facts of reveals and pulls.
type fakeAuditor struct {
	mu    sync.Mutex
	facts []catalog.AccessAudited
}

func (f *fakeAuditor) RecordAccess(_ context.Context, fact catalog.AccessAudited, _ string) (events.Position, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.facts = append(f.facts, fact)
	return events.Position{}, nil
}

// follower is a projector that applies nothing and records its position:
// it stands for a read model whose progress the edge waits for.
type follower struct {
	name string
	mu   sync.Mutex
	pos  events.Position
}

func (f *follower) Name() string { return f.name }

func (f *follower) Checkpoint(context.Context) (events.Position, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos, nil
}

func (f *follower) Apply(_ context.Context, _ []events.Envelope, pos events.Position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pos = pos
	return nil
}

func (f *follower) Reset(context.Context) error { return nil }

type harness struct {
	t          *testing.T
	store      *memory.Store
	reg        *events.Registry
	api        *API
	reports    *ReportAPI
	users      *fakeUsers
	orders     *fakeOrders
	dels       *fakeDeliveries
	rep        *fakeReports
	views      *fakeViews
	limiter    *fakeLimiter
	auditor    *fakeAuditor
	marks      *projections.Watermarks
	readModels map[projections.ReadModel]*subscribe.Runner
	handler    http.Handler
	appA       domain.App
	appB       domain.App
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	store, reg := memory.New(), catalog.Registry()
	t.Cleanup(func() { _ = store.Close() })
	sealer, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &harness{
		t: t, store: store, reg: reg,
		appA:    domain.App{AppID: 9001, Name: "a", AppKey: "key-a", AppSecret: "secret-a", Scopes: domain.Scopes, Environment: "production"},
		appB:    domain.App{AppID: 9002, Name: "b", AppKey: "key-b", AppSecret: "secret-b", Scopes: domain.Scopes, Environment: "production"},
		users:   &fakeUsers{groups: map[int64][]projections.Group{}, members: map[int64][]projections.Member{}},
		orders:  &fakeOrders{},
		dels:    &fakeDeliveries{},
		rep:     &fakeReports{},
		views:   &fakeViews{},
		limiter: &fakeLimiter{allowed: 100},
		auditor: &fakeAuditor{},
		marks:   projections.NewWatermarks(),
	}
	dir := edgetest.NewDirectory(h.appA, h.appB)
	h.readModels = map[projections.ReadModel]*subscribe.Runner{}
	var runners []*subscribe.Runner
	for _, f := range []projections.ReadModel{projections.ReadModelUsers, projections.ReadModelOrders, projections.ReadModelDeliveries, projections.ReadModelBenefits, projections.ReadModelReports} {
		run := subscribe.NewRunner(store, reg, &follower{name: string(f)}, log, nil)
		h.readModels[f] = run
		runners = append(runners, run)
	}
	schemeM := auth.SchemeM{Apps: dir, Now: fixedNow}
	schemeH := auth.SchemeH{Apps: dir, Nonces: &edgetest.Nonces{}, Now: fixedNow}
	h.api = &API{
		Store: h.users, Apps: directory.NewApps(sealer), Events: store, Runners: runners, ReadModelRunners: h.readModels,
		SchemeM: schemeM, SchemeH: schemeH, Admin: auth.Admin{Token: adminToken}, Watermarks: h.marks, Location: time.UTC,
		Orders: h.orders, Deliveries: h.dels, Auditor: h.auditor,
	}
	h.reports = &ReportAPI{
		Reports: h.rep, Events: store, Runner: h.readModels[projections.ReadModelReports], SchemeH: schemeH, Limiter: h.limiter,
		Views: h.views, Apps: dir, Location: time.UTC, Now: fixedNow, Watermarks: h.marks, Auditor: h.auditor,
	}
	h.handler = router(append(h.api.Routes(), h.reports.Routes()...))
	return h
}

// start runs the read models' runners until the test ends.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range h.readModels {
		wg.Add(1)
		go func() { defer wg.Done(); _ = run.Run(ctx) }()
	}
	h.t.Cleanup(func() { cancel(); wg.Wait() })
}

// appendEvent appends one event to the log and returns its position.
func (h *harness) appendEvent(stream string, p events.Payload) events.Position {
	h.t.Helper()
	prop, err := h.reg.Encode(p, events.Metadata{})
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := h.store.Append(context.Background(), stream, events.Any(), prop)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Position
}

// reply is what a partner observes of one answer (edgetest.Reply).
type reply = edgetest.Reply

// router serves routes as the node does (edgetest.Router).
var router = edgetest.Router

type sign func(req *http.Request, body []byte)

func asAdmin(req *http.Request, _ []byte) { req.Header.Set("Authorization", "Bearer "+adminToken) }

func as(app domain.App) sign {
	return func(req *http.Request, body []byte) {
		t := strconv.FormatInt(testNow.Unix(), 10)
		req.Header.Set("X-App-Id", strconv.FormatInt(app.AppID, 10))
		req.Header.Set("X-Timestamp", t)
		req.Header.Set("X-Signature", auth.SignM(app.AppKey, t, app.AppSecret, body))
	}
}

func schemeH(app domain.App, nonce string) sign { return schemeHAt(app, nonce, testNow) }

// schemeHAt signs as schemeH at the time at (the Postgres nonce store
// judges a nonce's expiry with the real clock).
func schemeHAt(app domain.App, nonce string, at time.Time) sign {
	return func(req *http.Request, body []byte) {
		t := strconv.FormatInt(at.Unix(), 10)
		req.Header.Set("X-App-Key", app.AppKey)
		req.Header.Set("X-Timestamp", t)
		req.Header.Set("X-Nonce", nonce)
		req.Header.Set("X-Signature", auth.SignH(app.AppSecret, req.Method, req.URL.RequestURI(), t, nonce, body))
	}
}

func (h *harness) get(path string, s sign) reply {
	h.t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if s != nil {
		s(req, nil)
	}
	return edgetest.Serve(h.t, h.handler, req)
}

func expect(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("%s: got %d %q, want %d %q: %s", what, r.Status, r.Code(), status, code, r.Raw)
	}
	if (status < 300) != r.Env.Success {
		t.Fatalf("%s: success=%v with status %d: %s", what, r.Env.Success, status, r.Raw)
	}
}

// readCase is one read and what it answers.
type readCase struct {
	name   string
	path   string
	sign   sign
	Status int
	code   string
}

func (h *harness) reads(t *testing.T, cases []readCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expect(t, c.name, h.get(c.path, c.sign), c.Status, c.code) })
	}
}
