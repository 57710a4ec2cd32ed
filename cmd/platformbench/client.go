package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/healthtech/partner-open-platform/internal/auth"
)

// Platform is the load tool's view of one running platform: its base URL,
// the operator token for set-up, and a keep-alive HTTP client sized for the
// benchmark's concurrency.
type Platform struct {
	Base       string
	AdminToken string
	HTTP       *http.Client
}

// newPlatform returns a client whose idle pool holds every worker's
// connection, so a closed loop never pays for a new TCP connection.
func newPlatform(base, adminToken string, conns int) *Platform {
	tr := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute}
	return &Platform{Base: base, AdminToken: adminToken, HTTP: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// App is a partner app's credentials as the admin API returned them.
type App struct {
	ID            int64  `json:"app_id"`
	Key           string `json:"app_key"`
	Secret        string `json:"app_secret"`
	WebhookSecret string `json:"webhook_secret"`
}

// envelope is the spec's common response body.
type envelope struct {
	Success bool            `json:"success"`
	Code    any             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// StatusError is an answer the scenario did not expect, with enough of the
// body to say why.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// signM sets scheme M's headers exactly as auth.SchemeM checks them:
// X-Signature = hex MD5(app_key + timestamp + app_secret + body).
func signM(req *http.Request, app App, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set("X-App-Id", strconv.FormatInt(app.ID, 10))
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", auth.SignM(app.Key, ts, app.Secret, body))
}

// signH sets scheme H's headers exactly as auth.SchemeH checks them, with a
// fresh random nonce (the platform refuses a reused one as a replay).
func signH(req *http.Request, app App, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	nonce := hex.EncodeToString(nb[:])
	req.Header.Set("X-App-Key", app.Key)
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Nonce", nonce)
	req.Header.Set("X-Signature", auth.SignH(app.Secret, req.Method, req.URL.RequestURI(), ts, nonce, body))
}

// do sends one request and decodes the envelope's data into out (when not
// nil); any status other than want is a *StatusError.
func (p *Platform) do(ctx context.Context, method, path string, body []byte, want int, sign func(*http.Request), out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.Base+path, rd)
	if err != nil {
		return fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sign(req)
	res, err := p.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if res.StatusCode != want {
		if len(raw) > 300 {
			raw = raw[:300]
		}
		return &StatusError{Method: method, Path: path, Status: res.StatusCode, Body: string(raw)}
	}
	if out == nil {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: decode envelope: %w", method, path, err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%s %s: decode data: %w", method, path, err)
	}
	return nil
}

// admin calls an operator route with the bearer token.
func (p *Platform) admin(ctx context.Context, method, path string, body any, want int, out any) error {
	return p.bearer(ctx, p.AdminToken, method, path, body, want, out)
}

// bearer calls a route authenticated by a bearer token (operator or uploader).
func (p *Platform) bearer(ctx context.Context, token, method, path string, body any, want int, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	return p.do(ctx, method, path, b, want, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, out)
}

// partnerM calls a scheme M route as app with the raw body given (nil for
// GET and DELETE). Bodies must differ between concurrent writes: the
// platform binds each accepted signature to its route for five minutes.
func (p *Platform) partnerM(ctx context.Context, app App, method, path string, body []byte, want int, out any) error {
	return p.do(ctx, method, path, body, want, func(r *http.Request) { signM(r, app, bodyOrEmpty(body), time.Now()) }, out)
}

// partnerH calls a scheme H route (the report pull) as app.
func (p *Platform) partnerH(ctx context.Context, app App, method, path string, want int, out any) error {
	return p.do(ctx, method, path, nil, want, func(r *http.Request) { signH(r, app, nil, time.Now()) }, out)
}

// plain calls an unauthenticated route (/healthz).
func (p *Platform) plain(ctx context.Context, path string, want int) error {
	return p.do(ctx, http.MethodGet, path, nil, want, func(*http.Request) {}, nil)
}

func bodyOrEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// createApp creates a partner app with every scope a scenario needs.
func (p *Platform) createApp(ctx context.Context, name string) (App, error) {
	var a App
	err := p.admin(ctx, http.MethodPost, "/admin/v1/apps", map[string]any{"name": name,
		"scopes": []string{"channel_users", "orders", "health_reports", "webhooks", "benefits"}}, http.StatusCreated, &a)
	return a, err
}
