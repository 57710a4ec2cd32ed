package commandapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// The handler tests drive the write edge through its router with the real
// commands on the in-memory event store (an adapter that passes the
// store's conformance suite) and small fakes of every port the edge owns:
// the app directory behind both signature schemes, the app directory's
// readiness, the projection rebuilder, the resender, the delivery log.

const adminToken = "admin-token-for-handler-tests"

// testNow is the fixed clock of signatures, orders and idempotency claims.
var testNow = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return testNow }

// fakeWaiter is the app (or operator) directory's readiness; err makes it
// never catch up.
type fakeWaiter struct {
	mu     sync.Mutex
	waited []events.Position
	err    error
}

func (f *fakeWaiter) WaitFor(_ context.Context, pos events.Position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waited = append(f.waited, pos)
	return f.err
}

// fakeRebuilder knows the projections named in names.
type fakeRebuilder struct {
	names map[string]bool
	err   error
}

func (f fakeRebuilder) Rebuild(_ context.Context, name string) (any, bool, error) {
	if f.err != nil {
		return nil, false, f.err
	}
	if !f.names[name] {
		return nil, false, nil
	}
	return map[string]any{"name": name, "rebuilding": true}, true, nil
}

// fakeResender holds deliveries by id with their app; a resend of another
// app's delivery is not found, exactly as an unknown id.
type fakeResender struct {
	mu      sync.Mutex
	owners  map[string]int64
	resent  []string
	written events.Position
}

func (f *fakeResender) Resend(_ context.Context, appID int64, id, _ string) (events.Position, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	owner, ok := f.owners[id]
	if !ok || (appID != 0 && owner != appID) {
		return events.Position{}, domain.ErrDeliveryNotFound
	}
	f.resent = append(f.resent, id)
	return f.written, nil
}

func (f *fakeResender) ResendMany(_ context.Context, appID int64, ids []string, _ string) (int, events.Position, error) {
	n := 0
	for _, id := range ids {
		if _, err := f.Resend(context.Background(), appID, id, ""); err == nil {
			n++
		}
	}
	return n, f.written, nil
}

// fakeDeliveries is the delivery log the bulk resend pages through.
type fakeDeliveries struct{ list []projections.Delivery }

func (f fakeDeliveries) Deliveries(_ context.Context, flt domain.DeliveryFilter) ([]projections.Delivery, error) {
	var out []projections.Delivery
	for _, d := range f.list {
		if d.AppID == flt.AppID {
			out = append(out, d)
		}
	}
	return out, nil
}

// fakeErasures says which deliveries were erased with their user.
type fakeErasures struct{ erased map[string]bool }

func (f fakeErasures) Check(_ context.Context, _ int64, id string) error {
	if f.erased[id] {
		return domain.ErrDeliveryErased
	}
	return nil
}

// fakeProviders is the provider directory verify-use consults.
type fakeProviders struct {
	mu        sync.Mutex
	providers map[int64][]int64
	// issuers is each fulfillment record's card issuer, as the benefits
	// read model would have it.
	issuers map[int64]int64
}

func (f *fakeProviders) ProviderIDs(_ context.Context, appID int64) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.providers[appID], nil
}

func (f *fakeProviders) FulfillmentIssuer(_ context.Context, record int64) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	app, ok := f.issuers[record]
	return app, ok, nil
}

// fakeUploaders is the uploader directory, by token hash.
type fakeUploaders struct {
	mu     sync.Mutex
	byHash map[string]directory.Uploader
}

func (f *fakeUploaders) Uploader(hash string) (directory.Uploader, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.byHash[hash]
	return u, ok
}

// harness is one write edge with its store and fakes.
type harness struct {
	t         *testing.T
	api       *API
	store     *memory.Store
	dir       *edgetest.Directory
	apps      *fakeWaiter
	resender  *fakeResender
	providers *fakeProviders
	uploaders *fakeUploaders
	handler   http.Handler
	appA      domain.App
	appB      domain.App
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	store, reg := memory.New(), catalog.Registry()
	t.Cleanup(func() { _ = store.Close() })
	sealer, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	names, err := domain.NewPseudonyms(make([]byte, domain.PseudonymKeySize))
	if err != nil {
		t.Fatal(err)
	}
	ids := commands.NewAllocator(store, reg, 10)
	h := &harness{
		t: t, store: store,
		dir:       edgetest.NewDirectory(),
		apps:      &fakeWaiter{},
		resender:  &fakeResender{owners: map[string]int64{}},
		uploaders: &fakeUploaders{byHash: map[string]directory.Uploader{}},
		providers: &fakeProviders{providers: map[int64][]int64{}, issuers: map[int64]int64{}},
		appA:      domain.App{AppID: 9001, Name: "a", AppKey: "key-a", AppSecret: "secret-a", Scopes: domain.Scopes, Environment: "production"},
		appB:      domain.App{AppID: 9002, Name: "b", AppKey: "key-b", AppSecret: "secret-b", Scopes: domain.Scopes, Environment: "production"},
	}
	h.dir.Put(h.appA)
	h.dir.Put(h.appB)
	marks := projections.NewWatermarks()
	h.api = &API{
		Users:      commands.NewUsers(store, reg, ids, names, fixedNow, time.UTC),
		Apps:       commands.NewApps(store, reg, ids, sealer, nil),
		SchemeM:    auth.SchemeM{Apps: h.dir, Now: fixedNow},
		SchemeH:    auth.SchemeH{Apps: h.dir, Nonces: &edgetest.Nonces{}, Now: fixedNow},
		Admin:      auth.Admin{Token: adminToken},
		Watermarks: marks, AppsReady: h.apps,
		Projections: fakeRebuilder{names: map[string]bool{"users": true}},
		Resender:    h.resender, Deliveries: fakeDeliveries{}, DeliveryErasures: fakeErasures{erased: map[string]bool{"erased-1": true}},
		Location:    time.UTC,
		Orders:      commands.NewOrders(store, reg, ids, fixedNow),
		Benefits:    commands.NewBenefits(store, reg, ids, fixedNow, 0, h.providers),
		Reports:     commands.NewReports(store, reg, ids, fixedNow),
		Credentials: commands.NewCredentialIssuer(store, reg, ids, fixedNow), UploaderDirectory: h.uploaders,
		Idempotency:   &idempotency.Keeper{Store: store, Registry: reg, Sealer: sealer, Now: fixedNow, Replayed: marks.Wrote},
		InternalToken: "internal-token",
	}
	h.handler = router(h.api.Routes())
	return h
}

// reply is what a partner observes of one answer (edgetest.Reply).
type reply = edgetest.Reply

// router serves routes as the node does (edgetest.Router).
var router = edgetest.Router

type sign func(req *http.Request, body []byte)

// asAdmin authenticates with the bootstrap operator token.
func asAdmin(req *http.Request, _ []byte) { req.Header.Set("Authorization", "Bearer "+adminToken) }

// schemeM signs as app with scheme M at ts (Unix seconds).
func schemeM(app domain.App, ts int64) sign {
	return func(req *http.Request, body []byte) {
		t := strconv.FormatInt(ts, 10)
		req.Header.Set("X-App-Id", strconv.FormatInt(app.AppID, 10))
		req.Header.Set("X-Timestamp", t)
		req.Header.Set("X-Signature", auth.SignM(app.AppKey, t, app.AppSecret, body))
	}
}

// schemeH signs as app with scheme H and nonce.
func schemeH(app domain.App, nonce string) sign {
	return func(req *http.Request, body []byte) {
		t := strconv.FormatInt(testNow.Unix(), 10)
		req.Header.Set("X-App-Key", app.AppKey)
		req.Header.Set("X-Timestamp", t)
		req.Header.Set("X-Nonce", nonce)
		req.Header.Set("X-Signature", auth.SignH(app.AppSecret, req.Method, req.URL.RequestURI(), t, nonce, body))
	}
}

// as signs as app with scheme M now.
func as(app domain.App) sign { return schemeM(app, testNow.Unix()) }

func (h *harness) do(method, path string, body any, s sign, extra ...string) reply {
	h.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			h.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	if s != nil {
		s(req, raw)
	}
	return edgetest.Serve(h.t, h.handler, req)
}

// head is the event store's head: a refused request leaves it unchanged.
func (h *harness) head() events.Position {
	h.t.Helper()
	pos, err := h.store.Head(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return pos
}

// expect fails unless r has status and code.
func expect(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("%s: got %d %q, want %d %q: %s", what, r.Status, r.Code(), status, code, r.Raw)
	}
	if (status < 300) != r.Env.Success {
		t.Fatalf("%s: success=%v with status %d: %s", what, r.Env.Success, status, r.Raw)
	}
}

// refusal is one request the edge must refuse without appending.
type refusal struct {
	name         string
	method, path string
	body         any
	sign         sign
	Status       int
	code         string
}

// refuses runs each refusal and checks that none appended an event.
func (h *harness) refuses(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := h.head()
			r := h.do(c.method, c.path, c.body, c.sign)
			expect(t, c.name, r, c.Status, c.code)
			if after := h.head(); after != before {
				t.Fatalf("%s appended: head %v -> %v", c.name, before, after)
			}
		})
	}
}

// register registers a channel user of app and returns its open_user_id.
func (h *harness) register(app domain.App, channelUserID string) int64 {
	h.t.Helper()
	r := h.do("POST", "/open/v1/channel/users", map[string]any{
		"channel_user_id": channelUserID, "user": map[string]any{"name": "Ann", "phone": "13800138000"},
	}, as(app))
	expect(h.t, "register", r, http.StatusCreated, "0")
	return r.Num(h.t, "open_user_id")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
