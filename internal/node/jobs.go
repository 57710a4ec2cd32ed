package node

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// startup times the phases of a start (logged in "node opened": what an
// operator waits for after a restart) and holds the collector's start-up
// target (startupGC) until every read model has caught up (the tail
// replay allocates as fast as the restore), or Open fails.
type startup struct {
	began, mark time.Time
	phases      []any
	restoreGC   func()
}

func beginStartup(cfg Config) *startup {
	now := time.Now()
	return &startup{began: now, mark: now, restoreGC: startupGC(cfg)}
}

// phase records how long the named phase took since the previous one ended.
func (s *startup) phase(name string) {
	s.phases = append(s.phases, name, time.Since(s.mark).Round(time.Millisecond))
	s.mark = time.Now()
}

// startProjections logs the start's phases and runs every projection (and
// the analyzer) until Close; it returns the context of the node's run.
func (n *Node) startProjections(st *startup, analyzer *subscribe.Runner, readModels subscribe.RunnerSet) context.Context {
	n.log.Info("node opened; projections start", append(st.phases, "took", time.Since(st.began).Round(time.Millisecond))...)
	if n.restored {
		// Only a restored heap is large enough for the raised target to
		// let a tail's garbage grow it far; a node without a snapshot
		// (every node of a short log, most tests' nodes) sets no limit: a
		// process-wide limit of twice one small node's heap would keep the
		// collector running once other nodes in the process outgrow it.
		capStartupHeap()
		noteRestored()
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, r := range append(n.Runners, analyzer) {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = r.Run(runCtx)
		}()
	}
	n.wg.Add(1)
	// A read model that never catches up must not keep the start's GC target.
	gcHold := time.AfterFunc(startupGCHold, st.restoreGC)
	go func() {
		defer n.wg.Done()
		defer gcHold.Stop()
		defer st.restoreGC()
		n.logCaughtUp(runCtx, st.began, readModels)
	}()
	return runCtx
}

// erasureFollower follows the log's erasures from erasedFrom (the log's
// head before this node opened any key): each one empties this node's
// loaded aggregate and key cache of the person, and settles the read-model
// snapshot's hold on the erasure (startJobs runs it).
func (n *Node) erasureFollower(users *commands.Users, erasedFrom events.Position) *privacy.ErasureFollower {
	return &privacy.ErasureFollower{Store: n.StoredEvents, Keys: n.Keys, From: erasedFrom, Log: n.log,
		Forgot: func(subject string, at events.Position) {
			if id, err := strconv.ParseInt(strings.TrimPrefix(subject, "user-"), 10, 64); err == nil {
				users.Forget(id)
			}
			if n.snapshots != nil {
				n.snapshots.Erased(context.Background(), subject, at)
			}
			n.forgotKey(subject, at)
		}}
}

// startJobs runs the node's background jobs: the erasure follower, the
// Postgres erasure purge, the cache sweep, the portal's mail, and the
// embedded snapshots.
func (n *Node) startJobs(ctx context.Context, cfg Config, users *commands.Users, readModels subscribe.RunnerSet) {
	n.spawn(ctx, "erasure follower", n.erasures.Run)
	if pg, ok := n.ReadModel.(*postgres.Store); ok && cfg.ErasurePurgeInterval >= 0 {
		n.spawnOwned(ctx, "erasure purge", n.Leases, "erasure-purge", cfg.LeaseTTL, n.purgeErased(pg, cfg.ErasurePurgeInterval))
	}
	n.spawn(ctx, "cache sweep", n.sweepCaches(users, cfg.CacheSweepInterval))
	if n.Portal != nil {
		n.spawn(ctx, "portal mail work", n.Portal.RunMailWork)
	}
	if n.decisionMails != nil {
		n.spawn(ctx, "review decision mails", n.decisionMails.Run)
	}
	if n.mailSender != nil {
		n.spawnOwned(ctx, "mail sender", n.Leases, "mail", cfg.LeaseTTL, n.mailSender.Run)
	}
	if n.snapshots != nil {
		n.runSnapshots(ctx, cfg, readModels)
	}
}

// spawn runs a background loop until ctx ends, restarting it with backoff when it fails.
func (n *Node) spawn(ctx context.Context, name string, run func(context.Context) error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			err := run(ctx)
			if ctx.Err() != nil {
				return
			}
			n.log.Error("background loop stopped; restarting", "loop", name, "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, 10*time.Second)
		}
	}()
}
