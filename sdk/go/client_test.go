package partneropen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

const (
	tAppID     = "10001"
	tAppKey    = "ak_test"
	tAppSecret = "as_test_secret"
)

// fakeServer is a loopback platform stand-in that checks every scheme M and
// scheme H signature and answers from a per-test handler.
type fakeServer struct {
	t    *testing.T
	mu   sync.Mutex
	reqs []*http.Request
	body [][]byte
	srv  *httptest.Server
}

func newFake(t *testing.T, h func(n int, r *http.Request, body []byte, w http.ResponseWriter)) *fakeServer {
	f := &fakeServer{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.body = append(f.body, b)
		n := len(f.reqs)
		f.mu.Unlock()
		switch {
		case r.Header.Get("X-App-Id") != "":
			want := SignM(tAppKey, r.Header.Get("X-Timestamp"), tAppSecret, b)
			if r.Header.Get("X-App-Id") != tAppID || r.Header.Get("X-Signature") != want {
				writeJSON(w, 401, map[string]any{"success": false, "code": "HTTP_401", "message": "bad signature", "timestamp": "x"})
				return
			}
		case r.Header.Get("X-App-Key") != "" && r.Header.Get("Authorization") == "":
			want := SignH(tAppSecret, r.Method, r.URL.RequestURI(), r.Header.Get("X-Timestamp"), r.Header.Get("X-Nonce"), b)
			if r.Header.Get("X-Signature") != want {
				writeJSON(w, 401, map[string]any{"success": false, "code": "INVALID_SIGNATURE", "message": "bad", "timestamp": "x"})
				return
			}
		}
		h(n, r, b, w)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req-"+strconv.Itoa(status))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ok(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, map[string]any{"success": true, "code": 0, "message": "ok", "data": data, "timestamp": "2026-11-23T10:00:00+08:00"})
}

// testClient builds a client whose sleeps are recorded instead of waited.
func testClient(t *testing.T, url string, opts ...Option) (*Client, *[]time.Duration) {
	t.Helper()
	c, err := NewClient(append([]Option{WithBaseURL(url), WithCredentials(tAppID, tAppKey, tAppSecret)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	slept := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*slept = append(*slept, d)
		mu.Unlock()
		return ctx.Err()
	}
	return c, slept
}

func TestNewClientRequiresBaseURLAndCredentials(t *testing.T) {
	if _, err := NewClient(WithCredentials("1", "k", "s")); err == nil {
		t.Error("no base URL accepted")
	}
	if _, err := NewClient(WithBaseURL("http://127.0.0.1:1")); err == nil {
		t.Error("no credentials accepted")
	}
}

func TestReadRetriesOn429HonouringRetryAfter(t *testing.T) {
	f := newFake(t, func(n int, r *http.Request, _ []byte, w http.ResponseWriter) {
		if n <= 2 {
			w.Header().Set("Retry-After", "7")
			writeJSON(w, 429, map[string]any{"success": false, "code": "HTTP_429", "message": "slow down", "timestamp": "x"})
			return
		}
		ok(w, 200, map[string]any{"order_code": "PO1", "items": []any{}})
	})
	c, slept := testClient(t, f.srv.URL)
	o, err := c.GetOrder(context.Background(), "PO1")
	if err != nil {
		t.Fatal(err)
	}
	if o.OrderCode != "PO1" || f.count() != 3 {
		t.Fatalf("order %+v after %d requests", o, f.count())
	}
	if len(*slept) != 2 || (*slept)[0] != 7*time.Second || (*slept)[1] != 7*time.Second {
		t.Fatalf("waits %v, want Retry-After 7s twice", *slept)
	}
	if f.reqs[0].URL.Query().Get("order_code") != "PO1" {
		t.Fatalf("query %q", f.reqs[0].URL.RawQuery)
	}
}

func TestRetryGivesUpAfterMaxRetriesWithTypedError(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		writeJSON(w, 503, map[string]any{"success": false, "code": "SERVICE_UNAVAILABLE", "message": "busy", "timestamp": "x"})
	})
	c, slept := testClient(t, f.srv.URL, WithRetryPolicy(RetryPolicy{MaxRetries: 2, BaseDelay: time.Second, MaxDelay: 90 * time.Second}))
	_, err := c.GetSnapshot(context.Background(), 5, SnapshotQuery{})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 || !apiErr.Temporary() || apiErr.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 3 {
		t.Fatalf("%d requests, want 1 + 2 retries", f.count())
	}
	// No Retry-After: exponential from BaseDelay.
	if len(*slept) != 2 || (*slept)[0] != time.Second || (*slept)[1] != 2*time.Second {
		t.Fatalf("waits %v", *slept)
	}
}

func TestBackoffIsCapped(t *testing.T) {
	c, _ := testClient(t, "http://127.0.0.1:1", WithRetryPolicy(RetryPolicy{MaxRetries: 9, BaseDelay: time.Second, MaxDelay: 5 * time.Second}))
	if d := c.backoff(6, 0); d != 5*time.Second {
		t.Errorf("backoff(6) = %v", d)
	}
	if d := c.backoff(0, time.Hour); d != 5*time.Second {
		t.Errorf("Retry-After of an hour not capped: %v", d)
	}
}

func TestWriteWithoutIdempotencyKeyIsNotRetried(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, 429, map[string]any{"success": false, "code": "HTTP_429", "message": "slow down", "timestamp": "x"})
	})
	// Automatic keys off: a write without a key cannot be repeated safely.
	c, slept := testClient(t, f.srv.URL, WithAutoIdempotencyKeys(false))
	_, err := c.CreateOrder(context.Background(), OrderCreateRequest{ThirdOrderID: "T1"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfter != time.Second {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 1 || len(*slept) != 0 || f.reqs[0].Header.Get("Idempotency-Key") != "" {
		t.Fatalf("unsafe write sent %d times (key %q)", f.count(), f.reqs[0].Header.Get("Idempotency-Key"))
	}
	// A write whose route takes no key is never retried, keys on or off.
	c, slept = testClient(t, f.srv.URL)
	if _, err := c.RotateWebhookSecret(context.Background()); !errors.As(err, &apiErr) || apiErr.Status != 429 {
		t.Fatalf("rotate: %v", err)
	}
	if f.count() != 2 || len(*slept) != 0 || f.reqs[1].Header.Get("Idempotency-Key") != "" {
		t.Fatalf("rotate sent %d times in all (key %q)", f.count()-1, f.reqs[1].Header.Get("Idempotency-Key"))
	}
}

// TestGeneratedKeyIsReusedAcrossRetriesWithFreshSignatures: a write without
// an explicit key gets a UUID, the same on every retry of that call and a
// new one for the next call; each attempt is signed anew (new nonce), as
// the platform refuses a reused nonce.
func TestGeneratedKeyIsReusedAcrossRetriesWithFreshSignatures(t *testing.T) {
	f := newFake(t, func(n int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		if n <= 2 {
			writeJSON(w, 503, map[string]any{"success": false, "code": "SERVICE_UNAVAILABLE", "message": "busy", "timestamp": "x"})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	c, slept := testClient(t, f.srv.URL)
	ctx := context.Background()
	if err := c.DeleteFamilyMember(ctx, 7, 8); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFamilyMember(ctx, 7, 9); err != nil {
		t.Fatal(err)
	}
	if f.count() != 4 || len(*slept) != 2 {
		t.Fatalf("%d requests, %d waits; want 3 attempts of the first call and 1 of the second", f.count(), len(*slept))
	}
	key := f.reqs[0].Header.Get("Idempotency-Key")
	if !uuidRE.MatchString(key) {
		t.Fatalf("generated key %q is not a UUID", key)
	}
	nonces := map[string]bool{}
	for i, r := range f.reqs {
		nonces[r.Header.Get("X-Nonce")] = true
		if k := r.Header.Get("Idempotency-Key"); (i < 3) != (k == key) {
			t.Errorf("request %d key %q (first call's key %q)", i, k, key)
		}
	}
	if len(nonces) != 4 || nonces[""] {
		t.Fatalf("attempts shared a nonce: %v", nonces)
	}
	// The caller's own key replaces the generated one.
	if err := c.DissolveFamilyGroup(ctx, 7, 3, WithIdempotencyKey("caller-key-1")); err != nil {
		t.Fatal(err)
	}
	if k := f.reqs[4].Header.Get("Idempotency-Key"); k != "caller-key-1" {
		t.Fatalf("caller's key replaced by %q", k)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestEveryWriteThatTakesAKeySendsOne calls every signed operation and
// checks that exactly the routes taking an Idempotency-Key (the route
// table, which the drift test holds to the document) carry one.
func TestEveryWriteThatTakesAKeySendsOne(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) { ok(w, 200, map[string]any{}) })
	c, _ := testClient(t, f.srv.URL)
	ctx := context.Background()
	calls := map[string]func() error{
		"registerChannelUser":    func() error { _, err := c.RegisterUser(ctx, RegisterRequest{ChannelUserID: "u"}); return err },
		"getChannelUserSnapshot": func() error { _, err := c.GetSnapshot(ctx, 1, SnapshotQuery{}); return err },
		"updateChannelUser":      func() error { return c.UpdateUser(ctx, 1, UserPatch{}) },
		"upsertFamilyGroup":      func() error { _, err := c.UpsertFamilyGroup(ctx, 1, FamilyGroupInput{}); return err },
		"dissolveFamilyGroup":    func() error { return c.DissolveFamilyGroup(ctx, 1, 2) },
		"upsertFamilyMember": func() error {
			_, err := c.UpsertFamilyMember(ctx, 1, FamilyMemberUpsertInput{})
			return err
		},
		"deleteFamilyMember":      func() error { return c.DeleteFamilyMember(ctx, 1, 2) },
		"listMyDeliveries":        func() error { _, err := c.ListDeliveries(ctx, DeliveryFilter{}); return err },
		"getMyDelivery":           func() error { _, err := c.GetDelivery(ctx, "d"); return err },
		"resendMyDelivery":        func() error { _, err := c.ResendDelivery(ctx, "d"); return err },
		"rotateMyWebhookSecret":   func() error { _, err := c.RotateWebhookSecret(ctx); return err },
		"activateMyWebhookSecret": func() error { _, err := c.ActivateWebhookSecret(ctx); return err },
		"webhookEventFeed":        func() error { _, err := c.ListEvents(ctx, "", 0); return err },
		"pullHealthReport":        func() error { _, err := c.PullHealthReport(ctx, 1); return err },
		"sandboxMockMeasure":      func() error { _, err := c.SandboxMockMeasure(ctx, MockMeasureRequest{}); return err },
		"createOrder":             func() error { _, err := c.CreateOrder(ctx, OrderCreateRequest{}); return err },
		"getOrderDetail":          func() error { _, err := c.GetOrder(ctx, "PO1"); return err },
		"triggerSandboxEvent":     func() error { _, err := c.TriggerSandboxEvent(ctx, "order.shipped"); return err },
		"sandboxShippedCallbackTest": func() error {
			_, err := c.SandboxShipOrder(ctx, SandboxShipmentRequest{})
			return err
		},
		"registerOwnServiceProvider": func() error {
			_, err := c.RegisterServiceProvider(ctx, ProviderRegistration{})
			return err
		},
		"batchIssueBenefitCards": func() error { _, err := c.BatchIssueCards(ctx, BatchIssueRequest{}); return err },
		"verifyBenefitUse":       func() error { _, err := c.VerifyUse(ctx, VerifyUseRequest{}); return err },
		"getBenefitCard":         func() error { _, err := c.GetBenefitCard(ctx, "C1"); return err },
		"listFulfillments":       func() error { _, err := c.ListFulfillments(ctx, "", 0, 0); return err },
		"rateFulfillment":        func() error { _, err := c.RateFulfillment(ctx, 1, RatingRequest{}); return err },

		"listMyWebhookEndpoints": func() error { _, err := c.ListWebhookEndpoints(ctx); return err },
		"getMyWebhookEndpoint":   func() error { _, err := c.GetWebhookEndpoint(ctx, 1); return err },
		"createMyWebhookEndpoint": func() error {
			_, err := c.CreateWebhookEndpoint(ctx, WebhookEndpointCreate{URL: "https://example.com/h"})
			return err
		},
		"updateMyWebhookEndpoint": func() error {
			_, err := c.UpdateWebhookEndpoint(ctx, 1, WebhookEndpointUpdate{})
			return err
		},
		"deleteMyWebhookEndpoint": func() error { return c.DeleteWebhookEndpoint(ctx, 1) },
		"rotateMyWebhookEndpointSecret": func() error {
			_, err := c.RotateWebhookEndpointSecret(ctx, 1)
			return err
		},
		"activateMyWebhookEndpointSecret": func() error {
			_, err := c.ActivateWebhookEndpointSecret(ctx, 1)
			return err
		},
		"sendMyWebhookEndpointTest": func() error { _, err := c.SendWebhookEndpointTest(ctx, 1); return err },
	}
	keys := map[string]bool{}
	for id, r := range routes {
		if id == "oauthToken" || id == "oauthRevoke" || id == "getDailyReport" {
			continue // OAuth: no app signature, no key
		}
		call, ok := calls[id]
		if !ok {
			t.Errorf("%s not exercised", id)
			continue
		}
		before := f.count()
		if err := call(); err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if f.count() != before+1 {
			t.Fatalf("%s sent %d requests", id, f.count()-before)
		}
		req := f.reqs[before]
		if req.Method != r.method {
			t.Errorf("%s sent %s", id, req.Method)
		}
		k := req.Header.Get("Idempotency-Key")
		if r.idem != (k != "") {
			t.Errorf("%s (%s %s): Idempotency-Key %q, route takes one: %v", id, r.method, r.path, k, r.idem)
		}
		if k != "" && (keys[k] || !uuidRE.MatchString(k)) {
			t.Errorf("%s: key %q repeated or not a UUID", id, k)
		}
		keys[k] = true
		// The default scheme is H on every route.
		if req.Header.Get("X-Nonce") == "" || req.Header.Get("X-App-Id") != "" {
			t.Errorf("%s was not signed with scheme H: %v", id, req.Header)
		}
	}
}

// TestDefaultSignsSchemeH: with no option every signed call carries
// X-App-Key, X-Timestamp, a fresh X-Nonce and the HMAC over method, URI
// with query, timestamp, nonce and body hash, and calls of one second that
// would have clashed under scheme M (a read, a bodyless DELETE, a register)
// go out in that same second without waiting.
func TestDefaultSignsSchemeH(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) { ok(w, 200, map[string]any{}) })
	pinned := time.Unix(1763870400, 0).Add(900 * time.Millisecond)
	c, slept := testClient(t, f.srv.URL, WithClock(func() time.Time { return pinned }))
	ctx := context.Background()
	if _, err := c.RegisterUser(ctx, RegisterRequest{ChannelUserID: "u-1", User: UserProfile{Name: "张三"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSnapshot(ctx, 5, SnapshotQuery{ChannelUserID: "u-1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFamilyMember(ctx, 5, 6); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFamilyMember(ctx, 5, 7); err != nil {
		t.Fatal(err)
	}
	if len(*slept) != 0 || f.count() != 4 {
		t.Fatalf("%d requests, waits %v", f.count(), *slept)
	}
	wantURI := []string{"/open/v1/channel/users", "/open/v1/channel/users/5?channel_user_id=u-1",
		"/open/v1/channel/users/5/family-members/6", "/open/v1/channel/users/5/family-members/7"}
	nonces, sigs := map[string]bool{}, map[string]bool{}
	for i, r := range f.reqs {
		h := r.Header
		if h.Get("X-App-Key") != tAppKey || h.Get("X-Timestamp") != "1763870400" || h.Get("X-App-Id") != "" {
			t.Errorf("request %d headers %v", i, h)
		}
		if r.URL.RequestURI() != wantURI[i] {
			t.Errorf("request %d URI %q, want %q", i, r.URL.RequestURI(), wantURI[i])
		}
		want := SignH(tAppSecret, r.Method, wantURI[i], "1763870400", h.Get("X-Nonce"), f.body[i])
		if h.Get("X-Signature") != want || len(want) != 64 {
			t.Errorf("request %d signature %q, want %q", i, h.Get("X-Signature"), want)
		}
		nonces[h.Get("X-Nonce")], sigs[h.Get("X-Signature")] = true, true
	}
	if len(nonces) != 4 || len(sigs) != 4 {
		t.Fatalf("nonces %v signatures %v not all distinct", nonces, sigs)
	}
}

// TestSchemeMByOption: WithScheme(SchemeM) signs the spec's MD5 scheme on
// the routes that accept it (no nonce), still scheme H on the report pull,
// and sends calls of one second in that second: the client keeps no
// per-second bookkeeping, the platform accepts them.
func TestSchemeMByOption(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) { ok(w, 200, map[string]any{"id": 1}) })
	pinned := time.Unix(1763870403, 0)
	c, slept := testClient(t, f.srv.URL, WithScheme(SchemeM), WithClock(func() time.Time { return pinned }))
	ctx := context.Background()
	if _, err := c.GetSnapshot(ctx, 5, SnapshotQuery{}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFamilyMember(ctx, 5, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullHealthReport(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if len(*slept) != 0 || f.count() != 3 {
		t.Fatalf("%d requests, waits %v", f.count(), *slept)
	}
	for i, r := range f.reqs[:2] {
		h := r.Header
		// The shared vector "DELETE member, empty body" at this timestamp, with the test's credentials.
		if h.Get("X-App-Id") != tAppID || h.Get("X-Timestamp") != "1763870403" || h.Get("X-Nonce") != "" || h.Get("X-App-Key") != "" ||
			h.Get("X-Signature") != SignM(tAppKey, "1763870403", tAppSecret, nil) {
			t.Errorf("request %d headers %v", i, h)
		}
	}
	if h := f.reqs[2].Header; h.Get("X-Nonce") == "" || h.Get("X-App-Key") != tAppKey || h.Get("X-App-Id") != "" {
		t.Errorf("report pull under SchemeM not scheme H: %v", h)
	}
	if _, err := NewClient(WithBaseURL(f.srv.URL), WithCredentials(tAppID, tAppKey, tAppSecret), WithScheme(Scheme(7))); err == nil {
		t.Error("an unknown scheme was accepted")
	}
}

func TestWriteWithIdempotencyKeyIsRetriedWithTheSameKey(t *testing.T) {
	f := newFake(t, func(n int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		if n == 1 {
			writeJSON(w, 503, map[string]any{"success": false, "code": "SERVICE_UNAVAILABLE", "message": "busy", "timestamp": "x"})
			return
		}
		ok(w, 201, map[string]any{"id": 9, "order_code": "PO9", "order_time": "2026-11-23 10:00:00"})
	})
	c, _ := testClient(t, f.srv.URL)
	key := Idempotent()
	res, err := c.CreateOrder(context.Background(), OrderCreateRequest{ThirdOrderID: "T1"}, WithIdempotencyKey(key))
	if err != nil || res.OrderCode != "PO9" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if f.count() != 2 || f.reqs[0].Header.Get("Idempotency-Key") != key || f.reqs[1].Header.Get("Idempotency-Key") != key {
		t.Fatalf("retry did not carry the key")
	}
	if string(f.body[0]) != string(f.body[1]) {
		t.Fatal("retry changed the body")
	}
}

func TestAPIErrorCarriesValidationFieldsAndRequestID(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		writeJSON(w, 422, map[string]any{"success": false, "code": "VALIDATION_ERROR", "message": "invalid",
			"errors": map[string][]string{"user.phone": {"must be a mainland 11-digit mobile number"}}, "timestamp": "x"})
	})
	c, _ := testClient(t, f.srv.URL)
	_, err := c.RegisterUser(context.Background(), RegisterRequest{ChannelUserID: "u", User: UserProfile{Name: "n"}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err %T %v", err, err)
	}
	if apiErr.Status != 422 || apiErr.Code != "VALIDATION_ERROR" || apiErr.RequestID != "req-422" ||
		len(apiErr.FieldErrors["user.phone"]) != 1 || apiErr.Temporary() {
		t.Fatalf("%+v", apiErr)
	}
}

func TestCodelessAndNonJSONErrors(t *testing.T) {
	f := newFake(t, func(n int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		if n == 1 {
			writeJSON(w, 404, map[string]any{"success": false, "message": "report not found", "timestamp": "x"})
			return
		}
		w.WriteHeader(502)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	})
	c, _ := testClient(t, f.srv.URL)
	_, err := c.PullHealthReport(context.Background(), 1)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "" || apiErr.Message != "report not found" {
		t.Fatalf("codeless 404: %v", err)
	}
	_, err = c.PullHealthReport(context.Background(), 1)
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Message != "Bad Gateway" || string(apiErr.Body) != "<html>bad gateway</html>" {
		t.Fatalf("non-JSON 502: %v", err)
	}
}

func TestSchemeHSignsPathWithQueryAndFreshNonces(t *testing.T) {
	f := newFake(t, func(_ int, r *http.Request, _ []byte, w http.ResponseWriter) {
		ok(w, 200, map[string]any{"id": 90017, "app_id": 1, "is_viewed": false})
	})
	c, _ := testClient(t, f.srv.URL)
	for range 2 {
		rep, err := c.PullHealthReport(context.Background(), 90017)
		if err != nil || rep.ID != 90017 {
			t.Fatalf("rep %+v err %v", rep, err)
		}
	}
	if f.reqs[0].Header.Get("X-Nonce") == f.reqs[1].Header.Get("X-Nonce") || f.reqs[0].Header.Get("X-App-Key") != tAppKey {
		t.Fatal("scheme H nonce reused or app key missing")
	}
}

func TestConcurrentCallsAreIndependent(t *testing.T) {
	f := newFake(t, func(_ int, r *http.Request, _ []byte, w http.ResponseWriter) {
		id, _ := strconv.Atoi(r.URL.Path[len("/open/v1/channel/users/"):])
		ok(w, 200, map[string]any{"user": map[string]any{"open_user_id": id}, "family_groups": []any{}, "family_members": []any{}})
	})
	c, _ := testClient(t, f.srv.URL)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.GetSnapshot(context.Background(), int64(i+1), SnapshotQuery{})
			if err == nil && s.User.OpenUserID != int64(i+1) {
				err = fmt.Errorf("snapshot of %d answered for %d", i+1, s.User.OpenUserID)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if f.count() != 20 {
		t.Fatalf("%d requests", f.count())
	}
}

func TestPaginationFollowsCursors(t *testing.T) {
	f := newFake(t, func(_ int, r *http.Request, _ []byte, w http.ResponseWriter) {
		after := r.URL.Query().Get("after")
		switch r.URL.Path {
		case "/open/v1/webhooks/deliveries":
			next := map[string]any{"": "1-1", "1-1": "1-2", "1-2": nil}[after]
			ok(w, 200, map[string]any{"deliveries": []any{map[string]any{"delivery_id": "d" + after}}, "next_cursor": next})
		case "/open/v1/webhooks/events":
			more := after != "2-0"
			nextC := map[string]string{"": "1-0", "1-0": "2-0", "2-0": "2-0"}[after]
			ok(w, 200, map[string]any{"events": []any{map[string]any{"cursor": nextC, "event": "x"}}, "next_cursor": nextC, "has_more": more})
		}
	})
	c, _ := testClient(t, f.srv.URL)
	var ids []string
	for d, err := range c.AllDeliveries(context.Background(), DeliveryFilter{Status: "delivered", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.DeliveryID)
	}
	if fmt.Sprint(ids) != "[d d1-1 d1-2]" {
		t.Fatalf("deliveries %v", ids)
	}
	if f.reqs[0].URL.Query().Get("status") != "delivered" || f.reqs[0].URL.Query().Get("limit") != "1" {
		t.Fatalf("filter not sent: %s", f.reqs[0].URL.RawQuery)
	}
	n := 0
	for _, err := range c.AllEvents(context.Background(), "", 1) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d events", n)
	}
}

func TestIteratorStopsAtError(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		writeJSON(w, 403, map[string]any{"success": false, "code": "SCOPE_NOT_GRANTED", "message": "no", "timestamp": "x"})
	})
	c, _ := testClient(t, f.srv.URL)
	n := 0
	for _, err := range c.AllDeliveries(context.Background(), DeliveryFilter{}) {
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Code != "SCOPE_NOT_GRANTED" {
			t.Fatalf("err %v", err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d yields", n)
	}
}

func TestTokenUsesBasicAuthAndDailyReportBearer(t *testing.T) {
	f := newFake(t, func(_ int, r *http.Request, body []byte, w http.ResponseWriter) {
		switch r.URL.Path {
		case "/oauth/token":
			u, p, okb := r.BasicAuth()
			if !okb || u != tAppKey || p != tAppSecret || r.PostFormValue("grant_type") != "client_credentials" && string(body) == "" {
				writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "bad client"})
				return
			}
			writeJSON(w, 200, map[string]any{"access_token": "at_x", "token_type": "Bearer", "expires_in": 7200, "scope": "daily_report"})
		case "/v1/health/daily-report":
			if r.Header.Get("Authorization") != "Bearer at_x" || r.Header.Get("X-App-Key") != tAppKey {
				writeJSON(w, 401, map[string]any{"success": false, "code": "HTTP_401", "message": "no", "timestamp": "x"})
				return
			}
			ok(w, 200, map[string]any{"date": r.URL.Query().Get("date"), "aiInsight": "fine"})
		}
	})
	c, _ := testClient(t, f.srv.URL)
	tok, err := c.Token(context.Background())
	if err != nil || tok.AccessToken != "at_x" {
		t.Fatalf("token %+v err %v", tok, err)
	}
	rep, err := c.DailyReport(context.Background(), tok.AccessToken, DailyReportQuery{OpenUserID: 3, Date: "2026-11-22"})
	if err != nil || rep.Date != "2026-11-22" || rep.AIInsight != "fine" {
		t.Fatalf("report %+v err %v", rep, err)
	}
	bad, _ := testClient(t, f.srv.URL, WithCredentials(tAppID, tAppKey, "wrong"))
	_, err = bad.Token(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Code != "invalid_client" {
		t.Fatalf("bad client: %v", err)
	}
}

func TestContextCancelStopsRetryWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 429, map[string]any{"success": false, "code": "HTTP_429", "message": "slow", "timestamp": "x"})
		cancel() // the caller gives up while the client waits Retry-After
	})
	// The real sleep: it must return at cancellation, not after 30 s.
	c, err := NewClient(WithBaseURL(f.srv.URL), WithCredentials(tAppID, tAppKey, tAppSecret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetOrder(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 1 {
		t.Fatalf("%d requests after cancellation", f.count())
	}
}

func TestPluginLaunchRoundTripAndPlatformVectors(t *testing.T) {
	c, _ := testClient(t, "http://127.0.0.1:1")
	l, err := c.NewPluginLaunch("user-1", PluginProfile{Gender: "female", Height: 165, BirthDate: "1990-01-01"}, "BODY_COMPOSITION_ANALYSIS", "BCA")
	if err != nil {
		t.Fatal(err)
	}
	if l.Sign != SignPluginLaunch(tAppSecret, tAppKey, "user-1", l.Timestamp, l.Nonce) || len(l.Timestamp) != 10 {
		t.Fatalf("launch %+v", l)
	}
	p, err := DecryptPluginProfile(tAppSecret, tAppKey, "user-1", l.UserProfile)
	if err != nil || p.Height != 165 || p.Gender != "female" {
		t.Fatalf("profile %+v err %v", p, err)
	}
	if _, err := DecryptPluginProfile(tAppSecret, tAppKey, "user-2", l.UserProfile); err == nil {
		t.Fatal("profile opened for another user")
	}
	if _, err := c.NewPluginLaunch("a|b", PluginProfile{}, "HOME_SPO2_RING", "SPO2"); err == nil {
		t.Fatal("thirdUserId with | accepted")
	}
	// The platform's own published plugin vectors (read-only).
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "measureplugin", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Sign []struct {
			AppKey, AppSecret, ThirdUserID, Timestamp, Nonce, Sign string
		} `json:"sign"`
		Profile []struct {
			AppKey, AppSecret, ThirdUserID, Plaintext, UserProfile string
		} `json:"profile"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Sign) == 0 || len(v.Profile) == 0 {
		t.Fatalf("plugin vectors: %v", err)
	}
	for _, s := range v.Sign {
		if got := SignPluginLaunch(s.AppSecret, s.AppKey, s.ThirdUserID, s.Timestamp, s.Nonce); got != s.Sign {
			t.Errorf("sign %q: %s want %s", s.ThirdUserID, got, s.Sign)
		}
	}
	for _, pv := range v.Profile {
		got, err := DecryptPluginProfile(pv.AppSecret, pv.AppKey, pv.ThirdUserID, pv.UserProfile)
		if err != nil {
			t.Errorf("profile vector: %v", err)
			continue
		}
		var want PluginProfile
		if err := json.Unmarshal([]byte(pv.Plaintext), &want); err != nil || got != want {
			t.Errorf("profile vector: got %+v want %+v (%v)", got, want, err)
		}
	}
}

func TestClearFieldsSendsExplicitNull(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, _ []byte, w http.ResponseWriter) {
		writeJSON(w, 200, map[string]any{"success": true, "code": 0, "message": "ok", "timestamp": "x"})
	})
	c, _ := testClient(t, f.srv.URL)
	if err := c.UpdateUser(context.Background(), 1, UserPatch{Name: "A"}, ClearFields("nickname", "avatar")); err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	if err := json.Unmarshal(f.body[0], &sent); err != nil {
		t.Fatal(err)
	}
	if v, ok := sent["nickname"]; !ok || v != nil {
		t.Fatalf("nickname not null in %s", f.body[0])
	}
	if _, ok := sent["avatar"]; !ok || sent["name"] != "A" || len(sent) != 3 {
		t.Fatalf("body %s", f.body[0])
	}
	// Without ClearFields an unset field is not sent at all.
	if err := c.UpdateUser(context.Background(), 1, UserPatch{Name: "B"}); err != nil {
		t.Fatal(err)
	}
	if string(f.body[1]) != `{"name":"B"}` {
		t.Fatalf("body %s", f.body[1])
	}
}
