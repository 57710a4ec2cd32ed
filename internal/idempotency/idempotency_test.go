package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// clock is a settable time shared by the keepers of a test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is one event store shared by any number of keepers ("nodes").
type fixture struct {
	t        *testing.T
	store    *memory.Store
	reg      *events.Registry
	sealer   *secrets.Sealer
	clock    *clock
	replayed atomic.Int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sealer, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	return &fixture{t: t, store: store, reg: catalog.Registry(), sealer: sealer, clock: &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
}

// node is one more keeper over the fixture's store, as a second platform node would have.
func (f *fixture) node() *idempotency.Keeper {
	return &idempotency.Keeper{
		Store: f.store, Registry: f.reg, Sealer: f.sealer, Now: f.clock.Now, Wait: 2 * time.Second,
		Replayed: func(int64, events.Position) { f.replayed.Add(1) },
	}
}

func (f *fixture) count() int {
	f.t.Helper()
	recs, err := f.store.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(recs)
}

// effect is a handler with a counted side effect: it validates its body,
// claims the key, then "writes" (appends an event) and answers with a fresh id.
type effect struct {
	runs   atomic.Int64
	status int           // answer status after begin (0: 201 with an id)
	delay  time.Duration // work time after begin
}

func (e *effect) handler(w http.ResponseWriter, r *http.Request, begin func() error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" {
		v := &domain.ValidationError{}
		v.Add("name", "required")
		httpapi.Error(w, r, v)
		return
	}
	if err := begin(); err != nil {
		if err != idempotency.ErrAnswered {
			httpapi.Error(w, r, err)
		}
		return
	}
	n := e.runs.Add(1)
	time.Sleep(e.delay)
	switch e.status {
	case 0:
		httpapi.OK(w, http.StatusCreated, map[string]any{"id": n, "name": in.Name, "nonce": time.Now().UnixNano()})
	case http.StatusInternalServerError:
		httpapi.Error(w, r, context.Canceled) // an unknown error: logged 500
	case http.StatusConflict:
		httpapi.Error(w, r, domain.ErrContention)
	case http.StatusUnprocessableEntity:
		httpapi.Error(w, r, domain.ErrNoRemainingQuota)
	}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func send(k *idempotency.Keeper, app int64, method, path, key, body string, h idempotency.Handler) answer {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set(idempotency.Header, key)
	}
	w := httptest.NewRecorder()
	k.Serve(w, r, app, []byte(body), h)
	return answer{w.Code, w.Header(), w.Body.String()}
}

func code(t *testing.T, a answer) string {
	t.Helper()
	var env struct {
		Code   any                 `json:"code"`
		Errors map[string][]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(a.body), &env); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
	if s, ok := env.Code.(string); ok {
		return s
	}
	return "0"
}

func TestSameKeySameRequestReplaysFirstAnswerOnce(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	e := &effect{}
	first := send(k, 1, "POST", "/open/v1/x", "k-1", `{"name":"a"}`, e.handler)
	if first.status != 201 || first.header.Get(idempotency.ReplayedHeader) != "" {
		t.Fatalf("first: %+v", first)
	}
	n := f.count()
	for range 3 {
		again := send(k, 1, "POST", "/open/v1/x", "k-1", `{"name":"a"}`, e.handler)
		if again.status != first.status || again.body != first.body || again.header.Get(idempotency.ReplayedHeader) != "true" ||
			again.header.Get("Content-Type") != first.header.Get("Content-Type") {
			t.Fatalf("replay %+v\nfirst %+v", again, first)
		}
	}
	if e.runs.Load() != 1 || f.count() != n || f.replayed.Load() != 3 {
		t.Fatalf("runs %d, events %d→%d, replays told %d", e.runs.Load(), n, f.count(), f.replayed.Load())
	}
	// Without a key every request runs; another app's identical key is its own.
	send(k, 1, "POST", "/open/v1/x", "", `{"name":"a"}`, e.handler)
	if res := send(k, 2, "POST", "/open/v1/x", "k-1", `{"name":"a"}`, e.handler); res.status != 201 || res.body == first.body {
		t.Fatalf("other app: %+v", res)
	}
	if e.runs.Load() != 3 {
		t.Fatalf("runs %d", e.runs.Load())
	}
}

func TestKeyReusedForAnotherRequestIsRefusedAndAppendsNothing(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	e := &effect{}
	send(k, 1, "POST", "/open/v1/x", "k", `{"name":"a"}`, e.handler)
	n := f.count()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/open/v1/x", `{"name":"b"}`},
		{"POST", "/open/v1/x", `{"name":"a"} `},
		{"POST", "/open/v1/y", `{"name":"a"}`},
		{"PATCH", "/open/v1/x", `{"name":"a"}`},
		{"POST", "/open/v1/x?z=1", `{"name":"a"}`},
	} {
		res := send(k, 1, c.method, c.path, "k", c.body, e.handler)
		if res.status != 422 || code(t, res) != "IDEMPOTENCY_KEY_REUSED" {
			t.Fatalf("%+v: %+v", c, res)
		}
	}
	if e.runs.Load() != 1 || f.count() != n {
		t.Fatalf("runs %d, events %d→%d", e.runs.Load(), n, f.count())
	}
}

func TestBadKeysAndBadBodiesAppendNothing(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	e := &effect{}
	for _, key := range []string{strings.Repeat("x", 256), "tab\there", "é", "nul\x00"} {
		res := send(k, 1, "POST", "/open/v1/x", key, `{"name":"a"}`, e.handler)
		var env struct {
			Errors map[string][]string `json:"errors"`
		}
		_ = json.Unmarshal([]byte(res.body), &env)
		if res.status != 422 || code(t, res) != "VALIDATION_ERROR" || env.Errors[idempotency.Header] == nil {
			t.Fatalf("key %q: %+v", key, res)
		}
	}
	// An empty value and a repeated header are refused too.
	for _, vals := range [][]string{{""}, {"a", "b"}} {
		r := httptest.NewRequest("POST", "/open/v1/x", strings.NewReader(`{"name":"a"}`))
		r.Header[idempotency.Header] = vals
		w := httptest.NewRecorder()
		k.Serve(w, r, 1, []byte(`{"name":"a"}`), e.handler)
		if w.Code != 422 {
			t.Fatalf("header %q: %d %s", vals, w.Code, w.Body)
		}
	}
	// 255 printable characters are fine.
	if res := send(k, 1, "POST", "/open/v1/x", strings.Repeat("~", 255), `{"name":"a"}`, e.handler); res.status != 201 {
		t.Fatalf("255 chars: %+v", res)
	}
	n := f.count()
	// Invalid input is refused before the key is claimed: nothing appended, not stored.
	for range 2 {
		if res := send(k, 1, "POST", "/open/v1/x", "bad-body", `{"name":""}`, e.handler); res.status != 422 || res.header.Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("bad body: %+v", res)
		}
	}
	if f.count() != n || e.runs.Load() != 1 {
		t.Fatalf("bad input appended %d events, ran %d", f.count()-n, e.runs.Load())
	}
}

func TestFailuresWorthRetryingReleaseTheKeyOthersAreReplayed(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	for _, status := range []int{http.StatusInternalServerError, http.StatusConflict} {
		e := &effect{status: status}
		key := "k-" + http.StatusText(status)
		if res := send(k, 1, "POST", "/x", key, `{"name":"a"}`, e.handler); res.status != status {
			t.Fatalf("first: %+v", res)
		}
		e.status = 0
		if res := send(k, 1, "POST", "/x", key, `{"name":"a"}`, e.handler); res.status != 201 || res.header.Get(idempotency.ReplayedHeader) != "" {
			t.Fatalf("retry after %d: %+v", status, res)
		}
		if e.runs.Load() != 2 {
			t.Fatalf("after %d: runs %d", status, e.runs.Load())
		}
	}
	// A decision's refusal is an answer: replayed, not decided again.
	e := &effect{status: http.StatusUnprocessableEntity}
	first := send(k, 1, "POST", "/x", "k-422", `{"name":"a"}`, e.handler)
	e.status = 0
	again := send(k, 1, "POST", "/x", "k-422", `{"name":"a"}`, e.handler)
	if first.status != 422 || again.body != first.body || again.header.Get(idempotency.ReplayedHeader) != "true" || e.runs.Load() != 1 {
		t.Fatalf("422: %+v then %+v, runs %d", first, again, e.runs.Load())
	}
}

// TestConcurrentRequestsOnTwoNodesHaveOneEffect: twenty requests with one
// key, spread over two keepers sharing one store, run the work once and all
// get its answer.
func TestConcurrentRequestsOnTwoNodesHaveOneEffect(t *testing.T) {
	f := newFixture(t)
	nodes := []*idempotency.Keeper{f.node(), f.node()}
	e := &effect{delay: 50 * time.Millisecond}
	answers := make([]answer, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = send(nodes[i%2], 1, "POST", "/x", "same", `{"name":"a"}`, e.handler)
		}()
	}
	wg.Wait()
	replays := 0
	for _, a := range answers {
		if a.status != 201 || a.body != answers[0].body {
			t.Fatalf("answers differ: %+v vs %+v", a, answers[0])
		}
		if a.header.Get(idempotency.ReplayedHeader) == "true" {
			replays++
		}
	}
	if e.runs.Load() != 1 || replays != 19 {
		t.Fatalf("runs %d, replays %d", e.runs.Load(), replays)
	}
	// The second node replays what the first recorded (and vice versa).
	if res := send(nodes[1], 1, "POST", "/x", "same", `{"name":"a"}`, e.handler); res.body != answers[0].body {
		t.Fatalf("node 2: %+v", res)
	}
}

func TestRetryDuringALongRequestGets409InProgress(t *testing.T) {
	f := newFixture(t)
	slow := f.node()
	fast := f.node()
	fast.Wait = 100 * time.Millisecond
	e := &effect{delay: 600 * time.Millisecond}
	done := make(chan answer)
	go func() { done <- send(slow, 1, "POST", "/x", "k", `{"name":"a"}`, e.handler) }()
	time.Sleep(150 * time.Millisecond)
	res := send(fast, 1, "POST", "/x", "k", `{"name":"a"}`, e.handler)
	if res.status != 409 || code(t, res) != "IDEMPOTENCY_KEY_IN_PROGRESS" || res.header.Get("Retry-After") == "" {
		t.Fatalf("during: %+v", res)
	}
	// Another body is refused at once, even while the first runs.
	if res := send(fast, 1, "POST", "/x", "k", `{"name":"b"}`, e.handler); code(t, res) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("other body during: %+v", res)
	}
	first := <-done
	if res := send(fast, 1, "POST", "/x", "k", `{"name":"a"}`, e.handler); res.body != first.body || e.runs.Load() != 1 {
		t.Fatalf("after: %+v, runs %d", res, e.runs.Load())
	}
}

func TestKeysExpireAfter24Hours(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	e := &effect{}
	first := send(k, 1, "POST", "/x", "k", `{"name":"a"}`, e.handler)
	f.clock.add(24*time.Hour - time.Second)
	if res := send(k, 1, "POST", "/x", "k", `{"name":"a"}`, e.handler); res.body != first.body {
		t.Fatalf("within 24 h: %+v", res)
	}
	f.clock.add(time.Second)
	second := send(k, 1, "POST", "/x", "k", `{"name":"b"}`, e.handler)
	if second.status != 201 || second.header.Get(idempotency.ReplayedHeader) != "" || e.runs.Load() != 2 {
		t.Fatalf("after 24 h: %+v, runs %d", second, e.runs.Load())
	}
	// The new generation binds the key to the new body.
	if res := send(k, 1, "POST", "/x", "k", `{"name":"a"}`, e.handler); code(t, res) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("old body in new generation: %+v", res)
	}
	if res := send(k, 1, "POST", "/x", "k", `{"name":"b"}`, e.handler); res.body != second.body {
		t.Fatalf("new generation replay: %+v", res)
	}
}

// TestAbandonedClaimIsTakenOverAfterTheLease: a node that died between
// claiming and answering blocks the key only for the lease.
func TestAbandonedClaimIsTakenOverAfterTheLease(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	k.Wait = 50 * time.Millisecond
	body := `{"name":"a"}`
	stream := domain.IdempotencyStream(1, idempotency.KeyHash("k"))
	sum := fingerprintBody(body)
	ev, err := f.reg.Encode(catalog.IdempotencyClaimed{AppID: 1, Method: "POST", Path: "/x", BodySHA256: sum, ClaimedAt: f.clock.Now()}, events.Metadata{AppID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Append(context.Background(), stream, events.NoStream(), ev); err != nil {
		t.Fatal(err)
	}
	e := &effect{}
	if res := send(k, 1, "POST", "/x", "k", body, e.handler); code(t, res) != "IDEMPOTENCY_KEY_IN_PROGRESS" {
		t.Fatalf("within the lease: %+v", res)
	}
	f.clock.add(idempotency.DefaultLease)
	if res := send(k, 1, "POST", "/x", "k", body, e.handler); res.status != 201 || e.runs.Load() != 1 {
		t.Fatalf("after the lease: %+v", res)
	}
}

func TestStoredAnswerIsSealed(t *testing.T) {
	f := newFixture(t)
	k := f.node()
	send(k, 1, "POST", "/x", "secret-key-value", `{"name":"Zhang San"}`, (&effect{}).handler)
	recs, err := f.store.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if bytes.Contains(r.Data, []byte("Zhang")) || strings.Contains(r.Stream, "secret-key-value") || bytes.Contains(r.Data, []byte("secret-key-value")) {
			t.Fatalf("clear text in %s %s: %s", r.Stream, r.Type, r.Data)
		}
	}
	if len(recs) != 2 || recs[0].Type != "idempotency.claimed" || recs[1].Type != "idempotency.completed" {
		t.Fatalf("records %+v", recs)
	}
}

func fingerprintBody(body string) string {
	// The documented fingerprint: lower-case hex SHA-256 of the body bytes.
	return idempotency.KeyHash(body)
}
