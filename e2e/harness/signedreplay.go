package harness

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ShiftClock is the node's clock: real time moved by an offset the test
// advances, so requests signed with the real time stay fresh.
type ShiftClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *ShiftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *ShiftClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// SignedAt is a scheme M request signed exactly as the spec says, at the
// given second, with no care for other requests of that second: what a
// partner's own HTTP code sends.
func (a *App) SignedAt(method, path string, body []byte, sec int64) *http.Request {
	a.P.T.Helper()
	req, err := http.NewRequest(method, a.P.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		a.P.T.Fatal(err)
	}
	ts := strconv.FormatInt(sec, 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-App-Id", strconv.FormatInt(a.ID, 10))
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", SignM(a.Key, ts, a.Secret, body))
	return req
}
