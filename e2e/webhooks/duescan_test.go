package webhooks_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// A node that applies the deliveries read model and creates the deliveries
// scans the due queue for what its sender was not handed, not after every
// batch it applies: ten PATCHes' webhooks, each created, handed to this
// node's sender and delivered once, with the creation's and the outcome's
// applies prompting no scan (counting proxy). What scans are left are the
// sender's timed ones, at most one a second while a delivery is due.
func TestHandedOverDeliveriesPromptNoDueScan(t *testing.T) {
	t.Parallel()
	stmts, a, rcv, user := countedUser(t, "duescan", node.Config{})
	rcv.Secret = a.WebhookSecret // delivered at the first attempt: no retry to scan for
	// The due scan's statement (alone, or batched with the earliest due time's).
	scans := func(sql string) bool {
		return strings.Contains(sql, "FROM webhook_deliveries") && strings.Contains(sql, "next_attempt_at <=")
	}
	scans0, got0, t0 := stmts.Count(scans), len(rcv.WaitFor(1)), time.Now()

	const n = 10
	for i := range n {
		a.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("duescan-%d", i)}, http.StatusOK, "0")
		time.Sleep(100 * time.Millisecond) // one delivery per apply
	}
	seen := map[string]int{}
	for k := got0 + n; len(seen) < n; k++ {
		clear(seen)
		for _, w := range rcv.WaitFor(k) {
			if w.Event == "user.profile.updated" && w.Verified {
				seen[w.ID]++
			}
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("webhook %s arrived %d times, want once", id, k)
		}
	}
	scanned, secs := stmts.Count(scans)-scans0, time.Since(t0).Seconds()
	// One timed scan a second, and one more for the second begun.
	bound := int(math.Ceil(secs)) + 1
	t.Logf("%d deliveries in %.1f s: %d due scans (at most %d)", n, secs, scanned, bound)
	if scanned > bound {
		t.Errorf("%d deliveries handed to the sender that created them prompted %d due scans in %.1f s, want at most %d (the timed ones)",
			n, scanned, secs, bound)
	}
}
