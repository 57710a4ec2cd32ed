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

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
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

// Verify returns the calling app or a scheme H problem; it consumes the nonce.
func (s SchemeH) Verify(r *http.Request, body []byte) (projections.App, error) {
	key := strings.TrimSpace(r.Header.Get("X-App-Key"))
	if key == "" {
		return projections.App{}, ErrMissingAppKey
	}
	app, ok := s.Apps.ByKey(key)
	if !ok {
		return projections.App{}, ErrMissingAppKey
	}
	ts := strings.TrimSpace(r.Header.Get("X-Timestamp"))
	now := s.Now()
	if !FreshTimestamp(ts, now) {
		return projections.App{}, ErrInvalidSignature
	}
	got, err := hex.DecodeString(strings.TrimSpace(r.Header.Get("X-Signature")))
	if err != nil || len(got) != sha256.Size {
		return projections.App{}, ErrInvalidSignature
	}
	nonce := r.Header.Get("X-Nonce")
	if len(nonce) > 128 {
		return projections.App{}, ErrInvalidSignature
	}
	want, _ := hex.DecodeString(SignH(app.AppSecret, r.Method, requestURI(r), ts, nonce, body))
	if !hmac.Equal(got, want) {
		return projections.App{}, ErrInvalidSignature
	}
	replayKey := "n:" + nonce
	if nonce == "" {
		replayKey = "s:" + hex.EncodeToString(got)
	}
	sec, _ := strconv.ParseInt(ts, 10, 64)
	fresh, err := s.Nonces.Use(r.Context(), "h:"+strconv.FormatInt(app.AppID, 10), replayKey, time.Unix(sec, 0).Add(Window))
	if err != nil {
		return projections.App{}, err
	}
	if !fresh {
		return projections.App{}, &httpapi.Problem{Status: http.StatusUnauthorized, Code: "INVALID_SIGNATURE", Message: "nonce already used (replayed request)"}
	}
	return app, Allowed(app, ScopeOf(r.URL.Path))
}
