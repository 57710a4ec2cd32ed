// Package partneropen is the Go SDK of the partner open platform: signed
// calls (scheme M and scheme H) to every partner route with typed models
// generated from the platform's OpenAPI document, one typed error, safe
// retries, pagination, webhook verification and typed events, and the
// plugin host helper. It depends on the standard library only.
package partneropen

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client calls the platform as one partner app; it is safe for concurrent use.
type Client struct {
	baseURL   string
	appID     string
	appKey    string
	appSecret string
	http      *http.Client
	retry     RetryPolicy
	now       func() time.Time
	sleep     func(ctx context.Context, d time.Duration) error

	mu    sync.Mutex
	bound map[string]mBinding // scheme M write signature -> route it was sent on
}

// mBinding is the route a scheme M write signature was first sent on, and
// when the platform forgets it.
type mBinding struct {
	route   string
	expires time.Time
}

// Option configures a Client, so new settings never break NewClient's signature.
type Option func(*Client)

// WithBaseURL sets the platform's address (sandbox or production).
func WithBaseURL(u string) Option { return func(c *Client) { c.baseURL = strings.TrimRight(u, "/") } }

// WithCredentials sets the app id, app key and app secret the calls are signed with.
func WithCredentials(appID, appKey, appSecret string) Option {
	return func(c *Client) { c.appID, c.appKey, c.appSecret = appID, appKey, appSecret }
}

// WithHTTPClient replaces http.DefaultClient, for timeouts, proxies or tests.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetryPolicy replaces DefaultRetryPolicy; RetryPolicy{} disables retries.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithClock replaces time.Now for signing, so tests can pin timestamps.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// RetryPolicy says how often and how long to back off on 429 and 503; only
// safe requests (reads, or writes carrying an idempotency key) are retried.
type RetryPolicy struct {
	// MaxRetries is how many times a request is repeated after the first try.
	MaxRetries int
	// BaseDelay is the first back-off when the server sends no Retry-After.
	BaseDelay time.Duration
	// MaxDelay caps any single wait, Retry-After included.
	MaxDelay time.Duration
}

// DefaultRetryPolicy retries three times, from 500 ms doubling up to 30 s.
var DefaultRetryPolicy = RetryPolicy{MaxRetries: 3, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second}

// NewClient builds a client; WithBaseURL and WithCredentials are required.
func NewClient(opts ...Option) (*Client, error) {
	c := &Client{http: http.DefaultClient, retry: DefaultRetryPolicy, now: time.Now, sleep: sleepCtx}
	for _, o := range opts {
		o(c)
	}
	if c.baseURL == "" {
		return nil, errors.New("partneropen: WithBaseURL is required")
	}
	if _, err := url.Parse(c.baseURL); err != nil {
		return nil, fmt.Errorf("partneropen: base URL: %w", err)
	}
	if c.appID == "" || c.appKey == "" || c.appSecret == "" {
		return nil, errors.New("partneropen: WithCredentials is required")
	}
	return c, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// auth names how a request is authenticated.
type auth int

const (
	authM auth = iota
	authH
	authBearer
	authNone
)

// call is one request as the client builds it.
type call struct {
	method, path string
	query        url.Values
	body         any
	auth         auth
	idemKey      string
	bearer       string
	headers      map[string]string
	clear        []string
}

// envelope is the part of the platform's success envelope the client
// reads: data (failures go through DecodeErrorEnvelope).
type envelope struct {
	Data json.RawMessage `json:"data"`
}

// do sends c, retrying where safe, and decodes data into out (if not nil).
func (cl *Client) do(ctx context.Context, c call, out any) error {
	var body []byte
	if c.body != nil {
		var err error
		if body, err = json.Marshal(c.body); err != nil {
			return fmt.Errorf("partneropen: encode %s %s: %w", c.method, c.path, err)
		}
		if len(c.clear) > 0 {
			if body, err = withNulls(body, c.clear); err != nil {
				return fmt.Errorf("partneropen: encode %s %s: %w", c.method, c.path, err)
			}
		}
	}
	safe := c.method == http.MethodGet || c.idemKey != ""
	for attempt := 0; ; attempt++ {
		resp, raw, err := cl.send(ctx, c, body)
		if err != nil {
			return err
		}
		if resp.StatusCode < 300 {
			return decodeData(resp, raw, out)
		}
		apiErr := decodeError(resp, raw)
		retryable := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
		if !retryable || !safe || attempt >= cl.retry.MaxRetries {
			return apiErr
		}
		if err := cl.sleep(ctx, cl.backoff(attempt, apiErr.RetryAfter)); err != nil {
			return fmt.Errorf("partneropen: waiting to retry %s %s: %w", c.method, c.path, err)
		}
	}
}

// backoff is the wait before retry attempt+1: Retry-After when sent, else
// exponential from BaseDelay, capped by MaxDelay.
func (cl *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := retryAfter
	if d <= 0 {
		d = cl.retry.BaseDelay << attempt
	}
	if cl.retry.MaxDelay > 0 && d > cl.retry.MaxDelay {
		d = cl.retry.MaxDelay
	}
	return d
}

// send signs and performs one HTTP exchange, returning the full body.
func (cl *Client) send(ctx context.Context, c call, body []byte) (*http.Response, []byte, error) {
	uri := c.path
	if len(c.query) > 0 {
		uri += "?" + c.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, cl.baseURL+uri, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("partneropen: build %s %s: %w", c.method, c.path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	ts := strconv.FormatInt(cl.now().Unix(), 10)
	if c.auth == authM {
		route := http.MethodGet // reads are bound by method alone, as the platform does
		if c.method != http.MethodGet && c.method != http.MethodHead {
			route = c.method + " " + uri
		}
		if ts, err = cl.signatureTimestamp(ctx, route, body); err != nil {
			return nil, nil, err
		}
	}
	switch c.auth {
	case authM:
		req.Header.Set("X-App-Id", cl.appID)
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", SignM(cl.appKey, ts, cl.appSecret, body))
	case authH:
		nonce := newNonce()
		req.Header.Set("X-App-Key", cl.appKey)
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Nonce", nonce)
		req.Header.Set("X-Signature", SignH(cl.appSecret, c.method, uri, ts, nonce, body))
	case authBearer:
		req.Header.Set("Authorization", "Bearer "+c.bearer)
		req.Header.Set("X-App-Key", cl.appKey)
	}
	if c.idemKey != "" {
		req.Header.Set("Idempotency-Key", c.idemKey)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("partneropen: %s %s: %w", c.method, c.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("partneropen: read %s %s: %w", c.method, c.path, err)
	}
	return resp, raw, nil
}

// newNonce is a random scheme H nonce, so no two requests share one.
func newNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// decodeData unpacks a success envelope's data into out.
func decodeData(resp *http.Response, raw []byte, out any) error {
	if out == nil {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("partneropen: decode response (HTTP %d): %w", resp.StatusCode, err)
	}
	if len(env.Data) == 0 {
		return fmt.Errorf("partneropen: response (HTTP %d) has no data", resp.StatusCode)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("partneropen: decode data (HTTP %d): %w", resp.StatusCode, err)
	}
	return nil
}

// Idempotent returns a fresh idempotency key, for writes a caller wants
// retried safely on 429 and 503.
func Idempotent() string { return "sdk-" + newNonce() }

// sendForm performs one form POST with HTTP Basic app credentials.
func (cl *Client) sendForm(ctx context.Context, c call, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, c.method, cl.baseURL+c.path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("partneropen: build %s: %w", c.path, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(cl.appKey, cl.appSecret)
	resp, err := cl.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("partneropen: %s: %w", c.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("partneropen: read %s: %w", c.path, err)
	}
	return resp, raw, nil
}

// signatureTimestamp picks the timestamp of a scheme M call. The scheme M
// signature covers neither method nor path, and the platform binds each
// signature to the first route it saw it on (every read to "GET"), so two
// calls with the same body in the same second on different routes (a read
// then an empty-body write, rotate then activate, two DELETEs) would be
// refused as a replay: the second waits for the next second. Reads share
// one binding, and a retry of the same route keeps its signature.
func (cl *Client) signatureTimestamp(ctx context.Context, route string, body []byte) (string, error) {
	for {
		now := cl.now()
		ts := strconv.FormatInt(now.Unix(), 10)
		sig := SignM(cl.appKey, ts, cl.appSecret, body)
		cl.mu.Lock()
		if cl.bound == nil {
			cl.bound = map[string]mBinding{}
		}
		for k, b := range cl.bound {
			if now.After(b.expires) {
				delete(cl.bound, k)
			}
		}
		b, seen := cl.bound[sig]
		if !seen || b.route == route {
			cl.bound[sig] = mBinding{route: route, expires: time.Unix(now.Unix(), 0).Add(301 * time.Second)}
			cl.mu.Unlock()
			return ts, nil
		}
		cl.mu.Unlock()
		wait := time.Unix(now.Unix()+1, 0).Sub(now)
		if err := cl.sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("partneropen: waiting for a fresh signature second: %w", err)
		}
		// A frozen test clock would loop forever; the real clock moves on.
		if !cl.now().After(now) {
			return "", errors.New("partneropen: clock did not advance while waiting for a fresh signature second")
		}
	}
}

// Ptr returns a pointer to v, for the optional fields of request models.
func Ptr[T any](v T) *T { return &v }

// withNulls sets the named top-level fields of a JSON object to null.
func withNulls(body []byte, fields []string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for _, f := range fields {
		m[f] = json.RawMessage("null")
	}
	return json.Marshal(m)
}
