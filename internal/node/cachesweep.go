package node

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/privacy"
)

// sweepCaches returns the loop that bounds how long decrypted personal data
// stays in this node's caches when a key is destroyed without this node
// learning of it (the destroying node died before appending user.erased,
// so no erasure follower forgets the key here): every interval it empties
// the loaded users whose key no longer reads and the cache of decrypted
// events, and drops the expired keys from the key cache (their memory). With the key cache's own TTL, plaintext of such a person lives
// here at most datakeys.CacheTTL plus interval (README, Erasure).
func (n *Node) sweepCaches(users *commands.Users, interval time.Duration) func(context.Context) error {
	swept := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_erased_cache_entries_swept_total",
		Help: "Loaded users emptied by the periodic cache sweep because their key no longer reads (destroyed by a node that did not append user.erased).",
	})
	n.Metrics.Registry.MustRegister(swept)
	opened, _ := n.Events.(*privacy.Store)
	return func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			if k := users.SweepUnreadable(ctx); k > 0 {
				swept.Add(float64(k))
				n.log.Info("cache sweep emptied users whose key no longer reads", "users", k)
			}
			if opened != nil {
				opened.DropOpened()
			}
			if n.Keys != nil {
				n.Keys.DropExpired()
			}
		}
	}
}
