package node

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

// spawnOwned runs run on this node only while it holds the named lease
// (lease.RunHeld), so that of all the nodes sharing a store exactly one
// runs it; a failure of run is logged by spawn, which campaigns again after
// a backoff.
func (n *Node) spawnOwned(ctx context.Context, what string, leases lease.Store, name string, ttl time.Duration, run func(context.Context) error) {
	log := n.log.With("loop", what, "lease", name)
	n.spawn(ctx, what, func(ctx context.Context) error {
		return lease.RunHeld(ctx, leases, name, n.NodeID, ttl, log, run)
	})
}
