package harness

import (
	"bytes"
	"testing"
	"time"
)

// Keyed sends a signed request with an Idempotency-Key, signed at now.
func (a *App) Keyed(method, path string, body any, key string, now time.Time) Response {
	a.P.T.Helper()
	req := a.Request(method, path, body, now)
	req.Header.Set("Idempotency-Key", key)
	return a.P.Send(req)
}

// SameAnswer fails unless retry is a replay of first, byte for byte.
func SameAnswer(t *testing.T, what string, first, retry Response) {
	t.Helper()
	if retry.Status != first.Status || !bytes.Equal(retry.Raw, first.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%s: retry %d %s (replayed %q)\nfirst %d %s", what, retry.Status, retry.Raw, retry.Header.Get("Idempotent-Replayed"), first.Status, first.Raw)
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("%s: the first answer says it was replayed", what)
	}
}
