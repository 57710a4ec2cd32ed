package auth

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/sigvectors"
)

// vectorApp is the app the shared vectors were computed for.
func vectorApp(t *testing.T, f sigvectors.File) domain.App {
	t.Helper()
	id, err := strconv.ParseInt(f.Credentials.AppID, 10, 64)
	if err != nil {
		t.Fatalf("app_id %q: %v", f.Credentials.AppID, err)
	}
	return domain.App{AppID: id, AppKey: f.Credentials.AppKey, AppSecret: f.Credentials.AppSecret, Scopes: domain.Scopes}
}

// onceNonces accepts each nonce once, as the node's nonce store does.
type onceNonces struct {
	mu   sync.Mutex
	used map[string]bool
}

func (n *onceNonces) Use(_ context.Context, scope, nonce string, _ time.Time) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.used == nil {
		n.used = map[string]bool{}
	}
	if n.used[scope+"\x00"+nonce] {
		return false, nil
	}
	n.used[scope+"\x00"+nonce] = true
	return true, nil
}

func TestSharedVectorsSchemeM(t *testing.T) {
	f := sigvectors.Load(t)
	app := vectorApp(t, f)
	for _, c := range f.SchemeM.Cases {
		t.Run(c.Name, func(t *testing.T) {
			body := sigvectors.Bytes(t, c.Body, c.BodyBase64)
			ts := sigvectors.Stamp(c.Timestamp)
			if got := SignM(app.AppKey, ts, app.AppSecret, body); got != c.Signature {
				t.Fatalf("SignM = %s, vector %s", got, c.Signature)
			}
			verify := func(now time.Time) error {
				r := httptest.NewRequest(c.Method, "/open/v1/channel/users", bytes.NewReader(body))
				for k, v := range c.Headers {
					r.Header.Set(k, v)
				}
				s := SchemeM{Apps: dir{app.AppID: app}, Now: func() time.Time { return now }}
				_, err := s.Verify(r, body)
				return err
			}
			if err := verify(time.Unix(c.Timestamp+10, 0)); err != nil {
				t.Fatalf("the vector's own headers are refused: %v", err)
			}
			if err := verify(time.Unix(c.Timestamp+301, 0)); !errors.Is(err, httpapi.ErrUnauthorized) {
				t.Fatalf("301 s later: %v, want refusal", err)
			}
		})
	}
}

func TestSharedVectorsSchemeH(t *testing.T) {
	f := sigvectors.Load(t)
	app := vectorApp(t, f)
	for _, c := range f.SchemeH.Cases {
		t.Run(c.Name, func(t *testing.T) {
			body := sigvectors.Bytes(t, c.Body, c.BodyBase64)
			ts := sigvectors.Stamp(c.Timestamp)
			if got := StringToSignH(c.Method, c.URI, ts, c.Nonce, body); got != c.SignString {
				t.Fatalf("signString = %q, vector %q", got, c.SignString)
			}
			if got := SignH(app.AppSecret, c.Method, c.URI, ts, c.Nonce, body); got != c.Signature {
				t.Fatalf("SignH = %s, vector %s", got, c.Signature)
			}
			s := SchemeH{Apps: dir{app.AppID: app}, Nonces: &onceNonces{}}
			verify := func(now time.Time) error {
				r := httptest.NewRequest(c.Method, c.URI, bytes.NewReader(body))
				r.Header.Set("X-App-Key", app.AppKey)
				r.Header.Set("X-Timestamp", ts)
				if c.Nonce != "" {
					r.Header.Set("X-Nonce", c.Nonce)
				}
				r.Header.Set("X-Signature", c.Signature)
				s.Now = func() time.Time { return now }
				_, err := s.Verify(r, body)
				return err
			}
			if err := verify(time.Unix(c.Timestamp+301, 0)); !errors.Is(err, ErrInvalidSignature) {
				t.Fatalf("301 s later: %v, want INVALID_SIGNATURE", err)
			}
			if err := verify(time.Unix(c.Timestamp+10, 0)); err != nil {
				t.Fatalf("the vector's own request is refused: %v", err)
			}
			if err := verify(time.Unix(c.Timestamp+11, 0)); err == nil {
				t.Fatal("the same request again was accepted: replay")
			}
		})
	}
}
