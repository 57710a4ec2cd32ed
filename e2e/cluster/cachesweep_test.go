package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	keystore "github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// Node A destroys a user's key and dies before appending user.erased, so
// node B's erasure follower never forgets the key. Once B's key cache has
// expired (datakeys.CacheTTL on B's clock), B's periodic cache sweep empties the
// user B had loaded, although no command loads it again; an operator sees
// it in /metrics.
func TestCacheSweepEmptiesAUserWhoseKeyADeadNodeDestroyed(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64 // the nodes' clock runs ahead of the wall clock by this much
	pa, pb := harness.TwoNodes(t, func(c *node.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		c.CacheSweepInterval = 20 * time.Millisecond
	})
	onB := pa.CreateApp("partner").On(pb)
	var user harness.RegisterData
	onB.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("swept"), http.StatusCreated, "0").Data(t, &user)
	path := fmt.Sprintf("/open/v1/channel/users/%d", user.OpenUserID)
	onB.Expect("PATCH", path, map[string]any{"nickname": "secret-nickname"}, http.StatusOK, "0") // B loads the user
	if err := pa.Node.Keys.Destroy(context.Background(), fmt.Sprintf("user-%d", user.OpenUserID)); err != nil {
		t.Fatal(err)
	}
	pa.Stop() // and dies before appending user.erased

	// B's key cache still holds the key: the sweep keeps the user.
	time.Sleep(100 * time.Millisecond) // a few sweeps
	if n := swept(t, pb); n != 0 {
		t.Fatalf("B swept %v users before its key cache expired", n)
	}
	offset.Store(int64(keystore.CacheTTL))
	deadline := time.Now().Add(harness.WaitBound)
	for swept(t, pb) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("B's cache sweep did not empty the user within %s of its key cache expiring", harness.WaitBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// swept reads the sweep's counter from the node's metrics registry.
func swept(t *testing.T, p *harness.Platform) float64 {
	t.Helper()
	fams, err := p.Node.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "platform_erased_cache_entries_swept_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no platform_erased_cache_entries_swept_total in the node's metrics")
	return 0
}
