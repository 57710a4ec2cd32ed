package partneropen

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// WaitEvents sends the wait in whole seconds (capped at MaxFeedWait) and
// leaves it out when zero, so ListEvents stays a plain read.
func TestWaitEventsSendsTheWait(t *testing.T) {
	var mu sync.Mutex
	var waits []string
	f := newFake(t, func(_ int, r *http.Request, _ []byte, w http.ResponseWriter) {
		mu.Lock()
		waits = append(waits, r.URL.Query().Get("wait"))
		mu.Unlock()
		ok(w, 200, map[string]any{"events": []any{}, "next_cursor": "1-1", "has_more": false})
	})
	c, _ := testClient(t, f.srv.URL)
	ctx := context.Background()
	for _, d := range []time.Duration{5 * time.Second, 90 * time.Second, 0, 500 * time.Millisecond} {
		if _, err := c.WaitEvents(ctx, "1-1", 10, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ListEvents(ctx, "1-1", 10); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"5", "20", "", "", ""}; len(waits) != len(want) || waits[0] != want[0] || waits[1] != want[1] || waits[2] != "" || waits[3] != "" || waits[4] != "" {
		t.Fatalf("wait parameters sent %q, want %q", waits, want)
	}
}
