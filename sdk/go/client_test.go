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
	c, slept := testClient(t, f.srv.URL)
	_, err := c.CreateOrder(context.Background(), OrderCreateRequest{ThirdOrderID: "T1"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfter != time.Second {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 1 || len(*slept) != 0 {
		t.Fatalf("unsafe write sent %d times", f.count())
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

func TestSameBodyWritesToTwoRoutesGetDistinctSignatures(t *testing.T) {
	f := newFake(t, func(_ int, r *http.Request, _ []byte, w http.ResponseWriter) {
		ok(w, 200, map[string]any{})
	})
	base := time.Unix(1763870400, 0).Add(300 * time.Millisecond)
	var mu sync.Mutex
	now := base
	c, _ := testClient(t, f.srv.URL, WithClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	c.sleep = func(_ context.Context, d time.Duration) error { mu.Lock(); now = now.Add(d); mu.Unlock(); return nil }
	ctx := context.Background()
	if _, err := c.RotateWebhookSecret(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ActivateWebhookSecret(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteFamilyMember(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	// A read after an empty-body write: same body, so it must move on too;
	// a second read in that second may share the first read's signature.
	if _, err := c.GetDelivery(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetDelivery(ctx, "d2"); err != nil {
		t.Fatal(err)
	}
	if f.reqs[4].Header.Get("X-Signature") != f.reqs[3].Header.Get("X-Signature") {
		t.Fatal("two reads of one second were needlessly separated")
	}
	f.reqs = f.reqs[:4]
	sigs := map[string]bool{}
	for _, r := range f.reqs {
		sigs[r.Header.Get("X-Signature")] = true
	}
	if len(sigs) != 4 {
		t.Fatalf("empty-body calls to different routes shared a signature: %v", sigs)
	}
	if f.reqs[1].Header.Get("X-Timestamp") != "1763870401" {
		t.Fatalf("second write at %s, want the next second", f.reqs[1].Header.Get("X-Timestamp"))
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
	b, err := os.ReadFile(filepath.Join("..", "..", "plugin", "testdata", "vectors.json"))
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
