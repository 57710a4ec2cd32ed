package erasure_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/projections"
)

// TestErasureAnswersOnceApplied: an embedded node acknowledges an erasure
// only once its read models have applied it, so a read right after the
// answer no longer shows the person, and once its erasure follower has
// acted on it. The users read model is held on the batch before the
// erasure (another app's registration) until the read after the answer is
// made, or for a second: an answer that does not wait comes while it is
// held.
func TestErasureAnswersOnceApplied(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	var gone harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-gone"), http.StatusCreated, "0").Data(t, &gone)
	goneUser := fmt.Sprintf("/open/v1/channel/users/%d", gone.OpenUserID)
	a.Expect("GET", goneUser, nil, http.StatusOK, "0")

	var (
		mu       sync.Mutex
		armed    bool
		entered  = make(chan struct{})
		released = make(chan struct{})
	)
	p.Node.ReadModelRunners[projections.ReadModelUsers].AfterApply(func([]events.Envelope) {
		mu.Lock()
		hold := armed
		armed = false
		mu.Unlock()
		if !hold {
			return
		}
		close(entered)
		select {
		case <-released:
		case <-time.After(time.Second):
		}
	})
	mu.Lock()
	armed = true
	mu.Unlock()
	// Another app's write: the partner's reads do not wait for it.
	p.CreateApp("other").Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-other"), http.StatusCreated, "0")
	<-entered // the users read model holds the registration's batch; the erasure comes after it

	seen := p.Node.ErasureSeen()
	res := p.Admin("POST", fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID), map[string]any{"reason": "ticket 7"})
	if res.Status != http.StatusOK {
		t.Fatalf("erase: %d %s", res.Status, res.Raw)
	}
	got := a.Do("GET", goneUser, nil)
	close(released)
	if got.Status != http.StatusNotFound || got.Code() != "USER_NOT_FOUND" {
		t.Fatalf("GET %s right after the erasure's answer: %d %s, want 404 USER_NOT_FOUND", goneUser, got.Status, got.Raw)
	}
	if !seen.Less(p.Node.ErasureSeen()) {
		t.Fatal("the erasure was answered before this node's erasure follower acted on it")
	}
}
