package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Scheme H failures, with the spec's codes.
var (
	ErrMissingAppKey    = &httpapi.Problem{Status: http.StatusUnauthorized, Code: "MISSING_APP_KEY", Message: "X-App-Key is missing or unknown"}
	ErrInvalidSignature = &httpapi.Problem{Status: http.StatusUnauthorized, Code: "INVALID_SIGNATURE", Message: "signature, timestamp or nonce is not valid"}
)

// Nonces remembers used nonces for the timestamp window.
type Nonces interface {
	Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error)
}

// SchemeH verifies the report pull (and the sandbox mock): signString =
// METHOD \n URI \n timestamp \n nonce \n hex SHA-256(body), signed with
// HMAC-SHA256 keyed with the app secret.
//
// Replay: a nonce is accepted once within the window. When X-Nonce is
// absent the empty string enters signString (as the spec's formula reads)
// and the signature itself serves as the nonce, so an identical request
// cannot be replayed either.
type SchemeH struct {
	Apps   Directory
	Nonces Nonces
	Now    func() time.Time
}

// StringToSignH builds the spec's signString; clients and tests use it.
func StringToSignH(method, uri, timestamp, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	return strings.ToUpper(method) + "\n" + uri + "\n" + timestamp + "\n" + nonce + "\n" + hex.EncodeToString(sum[:])
}

// SignH computes X-Signature for scheme H.
func SignH(secret, method, uri, timestamp, nonce string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(StringToSignH(method, uri, timestamp, nonce, body)))
	return hex.EncodeToString(m.Sum(nil))
}

// requestURI is the path and query exactly as the client sent them.
func requestURI(r *http.Request) string {
	if r.RequestURI != "" && strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// Verify returns the calling app or a scheme H problem; it consumes the
// nonce. Why it refused goes to the access log only; a source out of
// failure budget (see Failures) gets a codeless 429, like the pull's own.
func (s SchemeH) Verify(r *http.Request, body []byte) (domain.App, error) {
	g := newGuard(r)
	key := strings.TrimSpace(r.Header.Get("X-App-Key"))
	app, known, unconfirmed := domain.App{}, false, error(nil)
	if key != "" {
		app, known, unconfirmed = AppByKey(s.Apps, key)
	}
	if known {
		g.app, g.note.AppID = app.AppID, app.AppID
	}
	if wait, blocked := g.blocked(); blocked {
		g.note.Reason = "too_many_failures"
		return domain.App{}, throttled(wait, "")
	}
	sigHeader := strings.TrimSpace(r.Header.Get("X-Signature"))
	attempt := sigHeader != ""
	if key == "" {
		g.fail("missing_app_key", attempt)
		return domain.App{}, ErrMissingAppKey
	}
	if !known && unconfirmed == nil {
		// The unknown key is not logged: it may be a secret sent by mistake.
		g.fail("unknown_app_key", attempt)
		return domain.App{}, ErrMissingAppKey
	}
	ts := strings.TrimSpace(r.Header.Get("X-Timestamp"))
	now := s.Now()
	if ts == "" {
		g.fail("missing_timestamp", attempt)
		return domain.App{}, ErrInvalidSignature
	}
	if !FreshTimestamp(ts, now) {
		g.fail(timestampReason(ts), attempt)
		return domain.App{}, ErrInvalidSignature
	}
	if sigHeader == "" {
		g.fail("missing_signature", false)
		return domain.App{}, ErrInvalidSignature
	}
	got, err := hex.DecodeString(sigHeader)
	if err != nil || len(got) != sha256.Size {
		g.fail("malformed_signature", true)
		return domain.App{}, ErrInvalidSignature
	}
	nonce := r.Header.Get("X-Nonce")
	if len(nonce) > 128 {
		g.fail("nonce_too_long", true)
		return domain.App{}, ErrInvalidSignature
	}
	if unconfirmed != nil {
		// A well-formed request of an app this node could not confirm
		// unknown: not the partner's failure, its app may exist and this
		// node lags.
		g.note.Reason = "directory_unconfirmed"
		return domain.App{}, unconfirmed
	}
	want, _ := hex.DecodeString(SignH(app.AppSecret, r.Method, requestURI(r), ts, nonce, body))
	if !hmac.Equal(got, want) {
		g.fail("bad_signature", true)
		return domain.App{}, ErrInvalidSignature
	}
	replayKey := "n:" + nonce
	if nonce == "" {
		replayKey = "s:" + hex.EncodeToString(got)
	}
	sec, _ := strconv.ParseInt(ts, 10, 64)
	fresh, err := s.Nonces.Use(r.Context(), "h:"+strconv.FormatInt(app.AppID, 10), replayKey, time.Unix(sec, 0).Add(Window))
	if err != nil {
		return domain.App{}, err
	}
	if !fresh {
		g.fail("replayed_nonce", true)
		return domain.App{}, &httpapi.Problem{Status: http.StatusUnauthorized, Code: "INVALID_SIGNATURE", Message: "nonce already used (replayed request)"}
	}
	return app, Allowed(app, ScopeOf(r.URL.Path))
}
