package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// requestTimeout bounds one admin API call.
const requestTimeout = 60 * time.Second

// APIError is a failed admin API call: the envelope's code and message, the
// per-field errors of a VALIDATION_ERROR, the HTTP status and the request id.
type APIError struct {
	Status    int
	Code      string
	Message   string
	Errors    map[string][]string
	RequestID string
}

// Error formats the error as CODE: message.
func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// envelope is the body of every platform response.
type envelope struct {
	Success   bool                `json:"success"`
	Code      json.RawMessage     `json:"code"`
	Message   string              `json:"message"`
	Data      json.RawMessage     `json:"data"`
	Errors    map[string][]string `json:"errors"`
	Timestamp string              `json:"timestamp"`
}

// client calls the admin API with the bearer token, or the partner API
// when sign is set (it then signs each request instead).
type client struct {
	base  string
	token string
	http  *http.Client
	sign  func(req *http.Request, body []byte)
}

func newClient(server, token string) (*client, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q is not an http(s) URL", server)
	}
	return &client{base: u.String(), token: token, http: &http.Client{Timeout: requestTimeout}}, nil
}

// do sends body (if not nil) as JSON to path (which may carry a query) and
// returns the envelope's data, or an *APIError for a failure envelope or a
// response that is not an envelope.
func (c *client) do(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	var rd io.Reader
	var sent []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		sent, rd = b, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if c.sign != nil {
		c.sign(req, sent)
	} else {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "platformctl")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading response: %w", method, path, err)
	}
	requestID := resp.Header.Get("X-Request-Id")

	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || (env.Code == nil && env.Message == "") {
		return nil, &APIError{
			Status: resp.StatusCode, Code: fmt.Sprintf("HTTP_%d", resp.StatusCode),
			Message: "response is not a platform envelope: " + snippet(raw), RequestID: requestID,
		}
	}
	if !env.Success || resp.StatusCode >= 300 {
		return nil, &APIError{
			Status: resp.StatusCode, Code: codeString(env.Code, resp.StatusCode), Message: env.Message,
			Errors: env.Errors, RequestID: requestID,
		}
	}
	return env.Data, nil
}

// codeString renders the envelope's code, a string for errors and 0 for success.
func codeString(raw json.RawMessage, status int) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	if t := strings.TrimSpace(string(raw)); t != "" && t != "null" && t != "0" {
		return t
	}
	return fmt.Sprintf("HTTP_%d", status)
}

// snippet is the start of a body, on one line, for error messages.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
