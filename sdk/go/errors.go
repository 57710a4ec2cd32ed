package partneropen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// APIError is every failure the platform answers with, so callers branch
// on Status and Code with errors.As instead of parsing messages.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the spec's error code (USER_NOT_FOUND, HTTP_401, ...); empty
	// for the report pull's codeless 404 and 429, and OAuth's error string.
	Code string
	// Message is the platform's human-readable text.
	Message string
	// FieldErrors maps field paths to messages (VALIDATION_ERROR only).
	FieldErrors map[string][]string
	// RequestID is the X-Request-Id the platform logged the call under, for support.
	RequestID string
	// RetryAfter is the server's Retry-After, zero when absent.
	RetryAfter time.Duration
	// Body is the raw response body, for anything the fields above miss.
	Body []byte
}

// Error describes the failure with its status, code and request id.
func (e *APIError) Error() string {
	code := e.Code
	if code == "" {
		code = "(no code)"
	}
	return fmt.Sprintf("partneropen: HTTP %d %s: %s (request %s)", e.Status, code, e.Message, e.RequestID)
}

// Temporary reports whether waiting and retrying may succeed (429 or 503).
func (e *APIError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable
}

// decodeError builds an APIError from a non-2xx response; it never fails,
// keeping the raw body when it is not an envelope.
func decodeError(resp *http.Response, raw []byte) *APIError {
	e := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"), Body: raw}
	if ra := strings.TrimSpace(resp.Header.Get("Retry-After")); ra != "" {
		if s, err := strconv.Atoi(ra); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		} else if t, err := http.ParseTime(ra); err == nil {
			e.RetryAfter = time.Until(t)
		}
	}
	code, msg, fields, ok := DecodeErrorEnvelope(raw)
	if !ok {
		e.Message = http.StatusText(resp.StatusCode)
		return e
	}
	e.Code, e.Message, e.FieldErrors = code, msg, fields
	return e
}

// DecodeErrorEnvelope reads a failure body: the platform's envelope
// (string code, message, errors) or an OAuth error (error,
// error_description); ok is false when the body is neither.
func DecodeErrorEnvelope(raw []byte) (code, message string, fields map[string][]string, ok bool) {
	var env struct {
		Code             json.RawMessage     `json:"code"`
		Message          *string             `json:"message"`
		Errors           map[string][]string `json:"errors"`
		OAuthError       string              `json:"error"`
		OAuthDescription string              `json:"error_description"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return "", "", nil, false
	}
	if env.Message == nil && env.OAuthError == "" {
		return "", "", nil, false
	}
	if len(env.Code) > 0 {
		var s string
		if json.Unmarshal(env.Code, &s) == nil {
			code = s
		} else {
			code = string(env.Code)
		}
	}
	if env.Message != nil {
		message = *env.Message
	}
	if env.OAuthError != "" {
		code, message = env.OAuthError, env.OAuthDescription
	}
	return code, message, env.Errors, true
}
