package webhooks_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// A node whose event store and read models share a database claims the
// deliveries it creates in the append that creates them, and releases a
// delivery's claim in the append of its attempt's outcome: ten PATCHes'
// webhooks, each delivered once, send no claim or release statement of
// their own (counting proxy).
func TestDeliveryClaimsRideTheCreationAndOutcomeAppends(t *testing.T) {
	t.Parallel()
	stmts, a, rcv, user := countedUser(t, "claimride", node.Config{})
	// Statements of their own: a claim (alone or with releases and the
	// claimed streams' read), a release (alone, or skipping locked rows).
	claims := func(sql string) bool {
		return strings.HasPrefix(strings.TrimSpace(sql), "INSERT INTO webhook_delivery_claims")
	}
	releases := func(sql string) bool {
		s := strings.TrimSpace(sql)
		return strings.HasPrefix(s, "DELETE FROM webhook_delivery_claims") ||
			strings.HasPrefix(s, "WITH l AS (") && strings.Contains(s, "webhook_delivery_claims")
	}
	riders := harness.Has("webhook_delivery_claims")
	claims0, releases0, riders0, got0 := stmts.Count(claims), stmts.Count(releases), stmts.Count(riders), len(rcv.WaitFor(1))

	const n = 10
	for i := range n {
		a.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("claimride-%d", i)}, http.StatusOK, "0")
	}
	seen := map[string]int{}
	var hooks []harness.Webhook
	for k := got0 + n; len(seen) < n; k++ {
		hooks = rcv.WaitFor(k)
		clear(seen)
		for _, w := range hooks {
			if w.Event == "user.profile.updated" {
				seen[w.ID]++
			}
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("webhook %s arrived %d times, want once", id, k)
		}
	}
	ownClaims, ownReleases := stmts.Count(claims)-claims0, stmts.Count(releases)-releases0
	rode := stmts.Count(riders) - riders0 - ownClaims - ownReleases
	t.Logf("%d deliveries: %d claim and %d release statements of their own, %d riding appends", n, ownClaims, ownReleases, rode)
	if ownClaims != 0 || ownReleases != 0 {
		t.Errorf("%d deliveries sent %d claim and %d release statements of their own, want none (each rides an append)", n, ownClaims, ownReleases)
	}
	if rode < 2 {
		t.Errorf("%d claim statements rode the appends, want the creations' claims and the outcomes' releases", rode)
	}
}
