package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// verifyFrom runs SchemeM.Verify for a request from addr through f, and
// returns the status it would answer (200 when accepted) and the log reason.
func verifyFrom(f *Failures, s SchemeM, addr string, appID int64, goodSig bool) (int, string) {
	ts := strconv.FormatInt(s.Now().Unix(), 10)
	r := httptest.NewRequest("GET", "/open/v1/webhooks/events", nil)
	r.RemoteAddr = addr
	r.Header.Set("X-App-Id", strconv.FormatInt(appID, 10))
	r.Header.Set("X-Timestamp", ts)
	sig := strings.Repeat("0", 32)
	if goodSig {
		app, _ := s.Apps.ByID(appID)
		sig = SignM(app.AppKey, ts, app.AppSecret, nil)
	}
	r.Header.Set("X-Signature", sig)
	note := &httpapi.Note{}
	status := http.StatusOK
	f.Install(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		r = r.WithContext(httpapi.WithNote(r.Context(), note))
		if _, err := s.Verify(r, nil); err != nil {
			var p *httpapi.Problem
			if !errors.As(err, &p) {
				panic(err)
			}
			status = p.Status
		}
	})).ServeHTTP(httptest.NewRecorder(), r)
	return status, note.Reason
}

// oneAppOn is scheme M for app 1 and a failure limiter, both on the clock
// *now.
func oneAppOn(now *time.Time) (SchemeM, *Failures) {
	clock := func() time.Time { return *now }
	f := NewFailures()
	f.Now = clock
	return SchemeM{Apps: dir{1: domain.App{AppID: 1, AppKey: "k1", AppSecret: "s", Scopes: domain.Scopes}}, Now: clock}, f
}

func TestAddressBudgetSpansAppsAndRefills(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	apps := dir{}
	for id := int64(1); id <= 10; id++ {
		apps[id] = domain.App{AppID: id, AppKey: "k" + strconv.FormatInt(id, 10), AppSecret: "s", Scopes: domain.Scopes}
	}
	s := SchemeM{Apps: apps, Now: clock}
	f := NewFailures()
	f.Now = clock
	// An attacker spreading guesses over apps spends the address budget.
	for i := range f.PerAddress {
		if st, reason := verifyFrom(f, s, "198.51.100.7:1000", int64(i%10+1), false); st != 401 || reason != "bad_signature" {
			t.Fatalf("failure %d: %d %s", i, st, reason)
		}
	}
	if st, reason := verifyFrom(f, s, "198.51.100.7:1001", 3, true); st != 429 || reason != "too_many_failures" {
		t.Fatalf("over the address budget: %d %s", st, reason)
	}
	// Another address, and another host's /64, are not affected.
	if st, _ := verifyFrom(f, s, "198.51.100.8:1000", 3, true); st != 200 {
		t.Fatalf("other address: %d", st)
	}
	// The budget refills with time.
	now = now.Add(FailurePeriod / time.Duration(f.PerAddress) * 2)
	if st, _ := verifyFrom(f, s, "198.51.100.7:1000", 3, true); st != 200 {
		t.Fatalf("after refill: %d", st)
	}
}

// A clock that steps back (NTP, or a node's test clock) neither refills a
// budget nor drains it: a few failures in the future leave the address
// its remaining budget, not blocked until the clock catches up.
func TestClockSteppedBackKeepsTheBudget(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, f := oneAppOn(&now)
	now = now.Add(48 * time.Hour)
	for i := range 3 {
		if st, _ := verifyFrom(f, s, "198.51.100.9:1000", 1, false); st != 401 {
			t.Fatalf("failure %d in the future: %d", i, st)
		}
	}
	now = now.Add(-48 * time.Hour)
	if st, reason := verifyFrom(f, s, "198.51.100.9:1000", 1, true); st != 200 {
		t.Fatalf("after the clock stepped back: %d %s", st, reason)
	}
	for i := 3; i < f.PerAppAddress; i++ { // the rest of the budget, no more
		if st, _ := verifyFrom(f, s, "198.51.100.9:1000", 1, false); st != 401 {
			t.Fatalf("failure %d: %d", i, st)
		}
	}
	if st, _ := verifyFrom(f, s, "198.51.100.9:1000", 1, false); st != 429 {
		t.Fatalf("over the budget after the step back: %d", st)
	}
}

func TestIPv6SourcesShareTheirSlash64(t *testing.T) {
	a := httptest.NewRequest("GET", "/", nil)
	a.RemoteAddr = "[2001:db8:1:2:aaaa::1]:443"
	b := httptest.NewRequest("GET", "/", nil)
	b.RemoteAddr = "[2001:db8:1:2:bbbb::9]:443"
	c := httptest.NewRequest("GET", "/", nil)
	c.RemoteAddr = "[2001:db8:1:3::1]:443"
	if SourceKey(a) != SourceKey(b) || SourceKey(a) == SourceKey(c) {
		t.Fatalf("keys %s %s %s", SourceKey(a), SourceKey(b), SourceKey(c))
	}
}

func TestSchemeHThrottleIsCodeless(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := SchemeH{Apps: dir{7: testApp}, Now: func() time.Time { return now }}
	f := NewFailures()
	f.Now = h.Now
	var last error
	for range f.PerAppAddress + 1 {
		r := httptest.NewRequest("GET", "/open/v1/health-reports/1", nil)
		r.RemoteAddr = "192.0.2.1:5"
		r.Header.Set("X-App-Key", testApp.AppKey)
		r.Header.Set("X-Timestamp", strconv.FormatInt(now.Unix(), 10))
		r.Header.Set("X-Signature", strings.Repeat("0", 64))
		f.Install(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { _, last = h.Verify(r, nil) })).ServeHTTP(httptest.NewRecorder(), r)
	}
	var p *httpapi.Problem
	if !errors.As(last, &p) || p.Status != 429 || p.Code != "" || p.Headers["Retry-After"] == "" {
		t.Fatalf("last answer %#v", last)
	}
}

// Requests that pass keep no budget: the limiter's memory holds the sources
// that failed, however many others call (a partner's fleet behind changing
// addresses, a scan of accepted requests), and a source that failed keeps
// its budget spent.
func TestAcceptedRequestsKeepNoBudget(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, f := oneAppOn(&now)
	for i := range 500 {
		if st, reason := verifyFrom(f, s, "198.51.100."+strconv.Itoa(i%250)+":"+strconv.Itoa(1000+i), 1, true); st != 200 {
			t.Fatalf("accepted request %d: %d %s", i, st, reason)
		}
	}
	if n := len(f.buckets); n != 0 {
		t.Fatalf("%d budgets kept for 250 sources that never failed, want 0", n)
	}
	for range f.PerAppAddress {
		verifyFrom(f, s, "198.51.100.7:1000", 1, false)
	}
	if st, reason := verifyFrom(f, s, "198.51.100.7:1001", 1, true); st != 429 || reason != "too_many_failures" {
		t.Fatalf("after its budget was spent: %d %s", st, reason)
	}
	if st, _ := verifyFrom(f, s, "198.51.100.8:1000", 1, true); st != 200 {
		t.Fatalf("another source: %d", st)
	}
	if n := len(f.buckets); n != 2 {
		t.Fatalf("%d budgets kept, want the failing source's two", n)
	}
}
