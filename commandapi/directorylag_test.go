package commandapi

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi/edgetest"
)

// laggingDirectory is a directory that follows the log and, while behind
// is set, cannot confirm it has reached the log's head: a miss then comes
// back unconfirmed, as the node's follower reports one.
type laggingDirectory struct {
	*edgetest.Directory
	behind atomic.Bool
}

func (d *laggingDirectory) ByIDChecked(id int64) (domain.App, bool, error) {
	app, ok := d.ByID(id)
	return app, ok, d.unconfirmed(ok)
}

func (d *laggingDirectory) ByKeyChecked(key string) (domain.App, bool, error) {
	app, ok := d.ByKey(key)
	return app, ok, d.unconfirmed(ok)
}

func (d *laggingDirectory) unconfirmed(found bool) error {
	if found || !d.behind.Load() {
		return nil
	}
	return fmt.Errorf("%w: the event store's head did not answer", auth.ErrDirectoryUnconfirmed)
}

// lagging puts a laggingDirectory behind both schemes of h.
func lagging(h *harness) *laggingDirectory {
	d := &laggingDirectory{Directory: h.dir}
	h.api.SchemeM.Apps, h.api.SchemeH.Apps = d, d
	h.handler = router(h.api.Routes())
	return d
}

// expectRetry fails unless r is the retryable 503 of a directory that
// could not confirm a miss.
func expectRetry(t *testing.T, what string, r reply) {
	t.Helper()
	expect(t, what, r, http.StatusServiceUnavailable, "HTTP_503")
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Fatalf("%s: Retry-After %q, want 1", what, got)
	}
	if r.Env.Message != auth.ErrDirectoryBehind.Message {
		t.Fatalf("%s: message %q, want %q", what, r.Env.Message, auth.ErrDirectoryBehind.Message)
	}
}

// An app created a moment ago through another node is not yet in this
// node's directory, and the node cannot reach the log's head to find out:
// its partner is told to retry (503 HTTP_503, Retry-After), never that its
// credentials are unknown, and nothing is appended. Once the directory has
// it, the same request succeeds; once the head is confirmed and the key is
// still unknown, the answer is 401.
func TestUnconfirmedMissIsRetryableNotUnauthorized(t *testing.T) {
	h := newHarness(t)
	dir := lagging(h)
	dir.behind.Store(true)
	fresh := domain.App{AppID: 9010, Name: "fresh", AppKey: "key-fresh", AppSecret: "secret-fresh", Scopes: domain.Scopes, Environment: "production"}
	register := func(n int) map[string]any {
		return map[string]any{"channel_user_id": fmt.Sprintf("cu-lag-%d", n), "user": map[string]any{"name": "Ann", "phone": "13800138000"}}
	}
	launch := map[string]any{"appKey": fresh.AppKey, "thirdUserId": "u-1", "userProfile": "p", "timestamp": "1", "nonce": "n",
		"sign": "s", "deviceKey": "d", "measureMode": "m"}

	before := h.head()
	expectRetry(t, "scheme M, app not yet here", h.do("POST", "/open/v1/channel/users", register(1), as(fresh)))
	expectRetry(t, "scheme H, key not yet here", h.do("POST", "/open/v1/channel/users", register(2), schemeH(fresh, "lag-1")))
	expectRetry(t, "plugin launch, key not yet here", h.do("POST", "/plugin/v1/sessions", launch, nil))
	if after := h.head(); after != before {
		t.Fatalf("a refused request appended: head %v -> %v", before, after)
	}

	// Requests that are bad whatever the directory holds stay 401: the
	// lag is no reason to answer them differently.
	h.refuses(t, []refusal{
		{"scheme M without X-Timestamp", "POST", "/open/v1/channel/users", register(3),
			func(req *http.Request, b []byte) { as(fresh)(req, b); req.Header.Del("X-Timestamp") }, http.StatusUnauthorized, "HTTP_401"},
		{"scheme M without X-App-Id", "POST", "/open/v1/channel/users", register(4),
			func(req *http.Request, b []byte) { as(fresh)(req, b); req.Header.Del("X-App-Id") }, http.StatusUnauthorized, "HTTP_401"},
		{"scheme H without X-Timestamp", "POST", "/open/v1/channel/users", register(5),
			func(req *http.Request, b []byte) { schemeH(fresh, "lag-4")(req, b); req.Header.Del("X-Timestamp") }, http.StatusUnauthorized, "HTTP_401"},
		{"scheme H with a malformed signature", "POST", "/open/v1/channel/users", register(5),
			func(req *http.Request, b []byte) {
				schemeH(fresh, "lag-5")(req, b)
				req.Header.Set("X-Signature", "zz")
			}, http.StatusUnauthorized, "HTTP_401"},
		{"scheme H without X-App-Key", "POST", "/open/v1/channel/users", register(5),
			func(req *http.Request, b []byte) { schemeH(fresh, "lag-2")(req, b); req.Header.Del("X-App-Key") }, http.StatusUnauthorized, "HTTP_401"},
		{"a known app's bad signature", "POST", "/open/v1/channel/users", register(6),
			func(req *http.Request, b []byte) { as(h.appA)(req, b); req.Header.Set("X-Signature", "00") }, http.StatusUnauthorized, "HTTP_401"},
	})

	// The directory catches up with the app: the retry succeeds.
	dir.Put(fresh)
	if r := h.do("POST", "/open/v1/channel/users", register(7), as(fresh)); r.Status != http.StatusCreated {
		t.Fatalf("retry once the directory has the app: %d %s", r.Status, r.Raw)
	}

	// The head is confirmed and the key is still unknown: 401.
	dir.behind.Store(false)
	stranger := domain.App{AppID: 9011, AppKey: "key-stranger", AppSecret: "secret-stranger"}
	h.refuses(t, []refusal{
		{"scheme M, confirmed unknown", "POST", "/open/v1/channel/users", register(8), as(stranger), http.StatusUnauthorized, "HTTP_401"},
		{"scheme H, confirmed unknown", "POST", "/open/v1/channel/users", register(9), schemeH(stranger, "lag-3"), http.StatusUnauthorized, "HTTP_401"},
	})
	launch["appKey"] = stranger.AppKey
	expect(t, "plugin launch, confirmed unknown", h.do("POST", "/plugin/v1/sessions", launch, nil), http.StatusUnauthorized, "INVALID_SIGNATURE")
}
