package auth

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

type dir map[int64]domain.App

func (d dir) ByID(id int64) (domain.App, bool) { a, ok := d[id]; return a, ok }
func (d dir) ByKey(k string) (domain.App, bool) {
	for _, a := range d {
		if a.AppKey == k {
			return a, true
		}
	}
	return domain.App{}, false
}

var testApp = domain.App{AppID: 7, AppKey: "ak_test", AppSecret: "as_secret", Scopes: domain.Scopes}

func scheme(now time.Time) SchemeM {
	return SchemeM{Apps: dir{7: testApp}, Now: func() time.Time { return now }}
}

// reference is an independent scheme M implementation, straight from the spec.
func reference(key, ts, secret string, body []byte) string {
	return fmt.Sprintf("%x", md5.Sum(append([]byte(key+ts+secret), body...)))
}

func TestSignMMatchesSpec(t *testing.T) {
	body := []byte(`{"a":"中文"}`)
	if got, want := SignM("k", "1700000000", "s", body), reference("k", "1700000000", "s", body); got != want {
		t.Fatalf("SignM %s, want %s", got, want)
	}
}

func TestVerifyAcceptsUpperCaseHexAndWindowEdges(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, skew := range []int64{-300, 0, 300} {
		ts := strconv.FormatInt(now.Unix()+skew, 10)
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header.Set("X-App-Id", "7")
		r.Header.Set("X-Timestamp", ts)
		r.Header.Set("X-Signature", fmt.Sprintf("%X", md5.Sum([]byte("ak_test"+ts+"as_secret"))))
		if _, err := scheme(now).Verify(r, nil); err != nil {
			t.Fatalf("skew %d: %v", skew, err)
		}
	}
}

// FuzzSchemeM: whatever the headers and body, Verify never panics and
// accepts exactly the requests whose signature the reference computes.
func FuzzSchemeM(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add("7", "1800000000", reference("ak_test", "1800000000", "as_secret", []byte("{}")), []byte("{}"))
	f.Add("7", "1800000000", "00", []byte(""))
	f.Add("-1", "x", "zz", []byte("\x00"))
	f.Add(" 7", "+1800000000", "", []byte("{"))
	f.Fuzz(func(t *testing.T, appID, ts, sig string, body []byte) {
		r := httptest.NewRequest("POST", "/x", nil)
		r.Header.Set("X-App-Id", appID)
		r.Header.Set("X-Timestamp", ts)
		r.Header.Set("X-Signature", sig)
		app, err := scheme(now).Verify(r, body)
		if err != nil {
			return
		}
		if app.AppID != 7 {
			t.Fatalf("accepted app %d", app.AppID)
		}
		sec, perr := strconv.ParseInt(r.Header.Get("X-Timestamp"), 10, 64)
		if perr != nil || sec < now.Unix()-300 || sec > now.Unix()+300 {
			t.Fatalf("accepted timestamp %q", ts)
		}
		want := reference(testApp.AppKey, r.Header.Get("X-Timestamp"), testApp.AppSecret, body)
		if got := fmt.Sprintf("%x", mustHex(t, r.Header.Get("X-Signature"))); got != want {
			t.Fatalf("accepted signature %q, reference %s", sig, want)
		}
	})
}

func mustHex(t *testing.T, s string) []byte {
	var b []byte
	if _, err := fmt.Sscanf(s, "%x", &b); err != nil {
		t.Fatalf("accepted non-hex signature %q", s)
	}
	return b
}

// A suspended app is refused before its scopes are looked at; an app is
// granted only its declared scopes.
func TestAllowedRefusesSuspendedAppsAndUngrantedScopes(t *testing.T) {
	app := domain.App{AppID: 1, Scopes: []string{"orders"}}
	if err := Allowed(app, "orders"); err != nil {
		t.Fatalf("granted scope: %v", err)
	}
	if err := Allowed(app, ""); err != nil {
		t.Fatalf("unscoped route: %v", err)
	}
	var p *httpapi.Problem
	if err := Allowed(app, "benefits"); !errors.As(err, &p) || p.Code != "SCOPE_NOT_GRANTED" || p.Status != 403 {
		t.Fatalf("ungranted scope: %v", err)
	}
	if err := Allowed(domain.App{AppID: 1}, "orders"); !errors.As(err, &p) || p.Code != "SCOPE_NOT_GRANTED" {
		t.Fatalf("no scopes grant nothing: %v", err)
	}
	app.Suspended = true
	if err := Allowed(app, "orders"); !errors.Is(err, domain.ErrAppSuspended) {
		t.Fatalf("suspended: %v", err)
	}
}

// SignM is the hex MD5 of key, timestamp, secret and body concatenated,
// whatever the body's size (the digest's stack buffer is 512 bytes).
func TestSignMDigestOfTheConcatenation(t *testing.T) {
	for _, n := range []int{0, 1, 480, 512, 513, 4096} {
		body := bytes.Repeat([]byte{'x', 0, 0xff}, n)[:n]
		sum := md5.Sum(append([]byte("key"+"1700000000"+"secret"), body...))
		if got, want := SignM("key", "1700000000", "secret", body), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("body of %d bytes: %s, want %s", n, got, want)
		}
	}
}
