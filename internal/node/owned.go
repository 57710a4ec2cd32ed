package node

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

// spawnOwned runs run on this node only while it holds the named lease, so
// that of all the nodes sharing a store exactly one runs it: it campaigns,
// runs under the held lease's context (which ends the moment the lease is
// lost and carries it for fencing), gives the lease up when run returns so
// another node takes over at once, and campaigns again. A node that dies
// holding the lease is replaced within the lease's time to live.
func (n *Node) spawnOwned(ctx context.Context, what string, leases lease.Store, name string, ttl time.Duration, run func(context.Context) error) {
	log := n.log.With("loop", what, "lease", name)
	n.spawn(ctx, what, func(ctx context.Context) error {
		for {
			held, err := lease.Campaign(ctx, leases, name, n.NodeID, ttl, log)
			if err != nil {
				return nil // ctx ended while standing by
			}
			log.Info("lease acquired: running on this node", "token", held.Lease().Token)
			err = run(held.Context())
			lost := held.Err()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if rerr := held.Release(rctx); rerr != nil && ctx.Err() == nil {
				log.Warn("release lease; it lapses by itself", "err", rerr)
			}
			cancel()
			switch {
			case ctx.Err() != nil:
				return nil
			case lost != nil:
				log.Warn("lease lost: standing by", "cause", lost)
			case err != nil:
				return err // spawn logs it and campaigns again after a backoff
			}
		}
	})
}
