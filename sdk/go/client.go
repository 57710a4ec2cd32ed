// Package partneropen is the Go SDK of the partner open platform: signed
// calls (scheme H by default, scheme M by option) to every partner route with typed models
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
	scheme    Scheme
	autoKeys  bool
}

// Scheme is how the client signs the routes that accept either signature
// scheme (every partner route but the report pull and the sandbox mock,
// which take scheme H only).
type Scheme int

const (
	// SchemeH (the default) signs method, path with query, timestamp, a
	// fresh single-use nonce and the body's SHA-256 under HMAC-SHA-256, so
	// no two requests share a signature and none can be replayed on
	// another route.
	SchemeH Scheme = iota
	// SchemeM is the spec's MD5 signature over app key, timestamp, app
	// secret and body, for platforms that do not accept scheme H on every
	// route. It covers neither method nor path nor a nonce.
	SchemeM
)

// String names the scheme as the spec does.
func (s Scheme) String() string {
	switch s {
	case SchemeH:
		return "H"
	case SchemeM:
		return "M"
	}
	return "Scheme(" + strconv.Itoa(int(s)) + ")"
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

// WithScheme chooses the signature of the routes that accept either scheme;
// SchemeH is the default. The report pull and the sandbox mock always use
// scheme H.
func WithScheme(s Scheme) Option { return func(c *Client) { c.scheme = s } }

// WithAutoIdempotencyKeys turns the per-call generated Idempotency-Key of
// the writes that take one on (the default) or off. Off, only writes given
// WithIdempotencyKey carry a key, and only those are retried.
func WithAutoIdempotencyKeys(on bool) Option { return func(c *Client) { c.autoKeys = on } }

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
	c := &Client{http: http.DefaultClient, retry: DefaultRetryPolicy, now: time.Now, sleep: sleepCtx, autoKeys: true}
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
	if c.scheme != SchemeH && c.scheme != SchemeM {
		return nil, fmt.Errorf("partneropen: unknown signature scheme %v", c.scheme)
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
	authApp auth = iota // the client's Scheme
	authH               // scheme H whatever the client's Scheme
	authBearer
	authNone
)

// call is one request as the client builds it.
type call struct {
	method, path string
	query        url.Values
	body         any
	auth         auth
	takesKey     bool // the route accepts an Idempotency-Key
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
	// One key per logical call, re-sent unchanged by every retry, so the
	// platform runs the write once however many attempts reach it.
	if c.takesKey && c.idemKey == "" && cl.autoKeys {
		c.idemKey = Idempotent()
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
	// Signed per attempt: a retry gets a fresh timestamp and nonce.
	ts := strconv.FormatInt(cl.now().Unix(), 10)
	a := c.auth
	if a == authApp && cl.scheme == SchemeH {
		a = authH
	}
	switch a {
	case authApp:
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

// Idempotent returns a fresh idempotency key (a random UUID), for a caller
// that keeps the key of a write to repeat it later (after a crash, say);
// the client generates one per call by itself otherwise.
func Idempotent() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

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
