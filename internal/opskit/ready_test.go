package opskit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// waitReady waits until /readyz answers 200 (projections caught up).
func waitReady(t *testing.T, h http.Handler) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
