package subscribe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
)

// ErrCheckpointBackwards is returned by a store that refused to move a
// projection's checkpoint back: the batch came from a writer that is behind
// (it should have been fenced), and nothing of it was committed.
var ErrCheckpointBackwards = errors.New("projections: the checkpoint would move backwards")

// ErrRebuildPending says a rebuild was recorded but no node has started it
// within the wait: the read model's owner will when it can (it is busy, or the
// read model has no owner until its lease is taken over).
var ErrRebuildPending = errors.New("projections: rebuild recorded but not started yet")

// Ownership makes a runner one of several nodes' runners of the same
// projection over shared read models: only the holder of the projection's
// lease projects (its writes fenced on the lease's token), the others
// follow the owner's progress so that their reads can wait for it, and one
// of them takes over within the lease's TTL when the owner dies.
type Ownership struct {
	// Leases keeps the projection's lease (Postgres in a cluster, memory
	// in embedded mode).
	Leases lease.Store
	// Holder is this node's identity (PLATFORM_NODE_ID).
	Holder string
	// TTL is the lease's time to live: a dead owner is replaced within it.
	TTL time.Duration
	// Shared shares progress and rebuild requests between nodes; nil in
	// embedded mode, where the runner is the only one.
	Shared Shared
	// Poll is how soon a failed read of the shared progress or a failed
	// announcement is tried again (default 2 s).
	Poll time.Duration
	// Heartbeat is how often, without news, the owner announces its
	// progress again and every node re-reads the stored progress and the
	// lease's holder, in case a notification was lost while the listener
	// stayed connected (default 15 Polls). Announcements follow every batch,
	// and a node whose listener (re)connects greets the others
	// (Progress.Hello), so the owners announce at once.
	Heartbeat time.Duration
}

// LeaseName is the lease a projection's owner holds.
func LeaseName(projection string) string { return "projection/" + projection }

// Progress is a projection's state as the nodes share it.
type Progress struct {
	// Generation counts the projection's resets (rebuilds): positions of
	// an older generation no longer describe its rows.
	Generation int64
	// Requested is the generation an operator's rebuild asked for: a
	// rebuild is pending while it exceeds Generation.
	Requested int64
	// Position is what the owner has applied (stored: its checkpoint).
	Position events.Position
	// Target is the log's head when the owner (re)started, zero when unknown.
	Target events.Position
	// Applied counts the events the owner applied in this generation.
	Applied uint64
	// CaughtUp says the owner had applied the log's end.
	CaughtUp bool
	// Owner is the node that announced it ("" when read from storage or
	// when it is a rebuild request).
	Owner string
	// Hello, on a Watch channel, says a node's listener (re)connected, so
	// notifications may have been lost: an owner announces again, a
	// follower re-reads the stored progress. It carries nothing else.
	Hello bool
}

// Shared is where the runners of one projection on several nodes meet: the
// projection's stored progress and rebuild requests, and announcements
// from its owner. projections/postgres implements it with the checkpoints
// table and LISTEN/NOTIFY.
type Shared interface {
	// Progress reads the stored generation, requested generation and checkpoint.
	Progress(ctx context.Context, projection string) (Progress, error)
	// Announce tells every node (best effort) what the owner has applied.
	Announce(ctx context.Context, projection string, p Progress) error
	// Watch delivers the announcements about projection, latest last, until
	// stop is called; a slow reader may miss some (the poll catches up).
	// It also delivers a Progress with Hello when any node's listener,
	// this one's included, (re)connects.
	Watch(projection string) (updates <-chan Progress, stop func())
	// RequestRebuild records that an operator wants projection rebuilt and
	// tells every node; it returns the generation the rebuild will have.
	// Requests made before the owner starts the rebuild share it.
	RequestRebuild(ctx context.Context, projection string) (generation int64, err error)
}

// runShared takes turns with the other nodes: it campaigns for the lease
// and projects while it holds it; meanwhile (and after losing it) it
// follows the owner's announced progress.
func (r *Runner) runShared(ctx context.Context) error {
	o := r.own
	if head, err := r.store.Head(ctx); err == nil {
		r.mu.Lock()
		if !r.stats.Ready {
			r.stats.Target = head
		}
		r.mu.Unlock()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Shared != nil {
		wg.Add(2)
		go func() { defer wg.Done(); r.watchShared(ctx) }()
		go func() { defer wg.Done(); r.announce(ctx) }()
	}
	log := r.log.With("node", o.Holder)
	return lease.RunHeld(ctx, o.Leases, LeaseName(r.Name()), o.Holder, o.TTL, log, func(held context.Context) error {
		r.setOwning(true)
		defer r.setOwning(false)
		if err := r.project(held); err != nil && held.Err() == nil {
			// Released and campaigned for again: the next owner, this
			// node or another, projects from the checkpoint.
			log.Warn("projecting the family failed; standing by for its lease", "err", err)
		}
		return nil
	})
}

func (r *Runner) setOwning(owning bool) {
	r.mu.Lock()
	r.owning = owning
	if owning {
		r.stats.Owner = r.own.Holder
	}
	// Heard: what the previous owner applied and this node did not hear of
	// is never applied here.
	close(r.heard)
	r.heard = make(chan struct{})
	r.mu.Unlock()
	if owning {
		r.kickAnnounce()
	}
}

// Owning says whether this node projects the projection now.
func (r *Runner) Owning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owning || r.own == nil
}

// kickAnnounce wakes the announcer without waiting for it.
func (r *Runner) kickAnnounce() {
	select {
	case r.announceKick <- struct{}{}:
	default:
	}
}

// announce tells the other nodes, while this node owns the projection,
// what it has applied: after every batch (also batches of events it
// ignores, so that followers' positions keep up with the log), when it
// becomes the owner or its generation changes, and again once a Heartbeat
// has passed without news, so a node that starts on an idle log learns
// where the owner is.
//
// Between those it sleeps: a failed announcement is tried again after a
// Poll, and otherwise the timer is set to the next Heartbeat, so an idle
// owner wakes once a Heartbeat per read model instead of every Poll.
func (r *Runner) announce(ctx context.Context) {
	t := time.NewTimer(r.own.Poll)
	defer t.Stop()
	var (
		failing, sent bool
		last          Progress
		lastAt        time.Time
	)
	for {
		tick := false
		select {
		case <-ctx.Done():
			return
		case <-r.announceKick:
		case <-t.C:
			tick = true
		}
		r.announceWakes.Add(1)
		again := r.announceAgain.Swap(false)
		r.mu.Lock()
		send := r.owning && r.genKnown
		p := Progress{Generation: r.gen, Position: r.pos, Target: r.stats.Target, Applied: r.stats.Applied,
			CaughtUp: r.stats.CaughtUp, Owner: r.own.Holder}
		r.mu.Unlock()
		quiet := tick && !again && !failing && sent && p == last && time.Since(lastAt) < r.own.Heartbeat
		if send && !quiet {
			err := r.own.Shared.Announce(ctx, r.Name(), p)
			if err != nil && !failing && ctx.Err() == nil {
				r.log.Warn("announcing progress failed; other nodes fall back to polling", "err", err)
			}
			failing = err != nil
			if !failing {
				sent, last, lastAt = true, p, time.Now()
			}
		}
		t.Reset(announceWait(r.own.Poll, r.own.Heartbeat, send, failing, sent, time.Since(lastAt)))
	}
}

// announceWait is how long the announcer sleeps unless kicked: a Poll to
// retry a failed or never-made announcement, else until a Heartbeat after
// the last one; while this node does not announce (it does not own the
// projection, or does not know its generation yet) a Heartbeat, since
// becoming the owner and learning the generation kick it.
func announceWait(poll, heartbeat time.Duration, send, failing, sent bool, sinceLast time.Duration) time.Duration {
	switch {
	case !send:
		return heartbeat
	case failing || !sent:
		return poll
	default:
		return max(heartbeat-sinceLast, 0)
	}
}

// watchShared follows the announcements and, every Heartbeat (every Poll
// while that fails) and whenever a node's listener (re)connects, the stored
// progress and the lease's holder.
func (r *Runner) watchShared(ctx context.Context) {
	sh := r.own.Shared
	updates, stop := sh.Watch(r.Name())
	defer stop()
	t := time.NewTimer(r.own.Heartbeat)
	defer t.Stop()
	var failing bool
	poll := func() {
		p, err := sh.Progress(ctx, r.Name())
		if err == nil {
			var l lease.Lease
			if l, err = r.own.Leases.Get(ctx, LeaseName(r.Name())); err == nil {
				p.Owner = l.Holder
				r.mu.Lock()
				if !r.owning {
					r.stats.Owner = l.Holder
				}
				r.mu.Unlock()
			}
		}
		if err != nil {
			if !failing && ctx.Err() == nil {
				r.log.Warn("reading the shared progress failed", "err", err)
			}
			failing = true
			return
		}
		failing = false
		r.observe(ctx, p, false)
	}
	again := func() {
		poll()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		if failing {
			t.Reset(r.own.Poll)
		} else {
			t.Reset(untilGrid(r.own.Heartbeat, time.Now()))
		}
	}
	again()
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-updates:
			if !p.Hello {
				r.observe(ctx, p, true)
				continue
			}
			if r.Owning() {
				r.announceAgain.Store(true)
				r.kickAnnounce()
			} else {
				again()
			}
		case <-t.C:
			again()
		}
	}
}

// untilGrid is how long from now until the next multiple of every since
// the epoch, at most every: a node's read models then check the stored
// progress at the same moments, so a store can read them all in one
// statement (projections/postgres gathers them), and no check comes later
// than every after the previous one.
func untilGrid(every time.Duration, now time.Time) time.Duration {
	if every <= 0 {
		return every
	}
	return every - time.Duration(now.UnixNano()%int64(every))
}

// observe applies what another node announced (announced) or what storage
// says: a pending rebuild, a new generation, or progress in the current one.
// Positions never move back except for a rebuild.
func (r *Runner) observe(ctx context.Context, p Progress, announced bool) {
	r.mu.Lock()
	if r.owning {
		want := r.genKnown && p.Requested > r.gen
		r.mu.Unlock()
		if want {
			select {
			case r.wantRebuild <- struct{}{}:
			default:
			}
		}
		return
	}
	needHead := r.genKnown && (p.Generation > r.gen || p.Requested > max(r.gen, r.awaitGen))
	r.mu.Unlock()
	var head events.Position
	if needHead {
		h, err := r.store.Head(ctx)
		if err != nil {
			return // the next poll tries again
		}
		head = h
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owning {
		return
	}
	if announced && p.Owner != "" {
		r.stats.Owner = p.Owner
	}
	changed, sameGen := false, false
	switch {
	case !r.genKnown:
		r.gen, r.genKnown = p.Generation, true
		changed, sameGen = true, true // first news: readiness is decided on it
		if r.pos.Less(p.Position) {
			r.pos = p.Position
		}
	case p.Generation > r.gen:
		target := p.Target
		if target.IsZero() {
			target = head
		}
		r.gen, r.pos = p.Generation, p.Position
		r.stats = Stats{Name: r.Name(), Since: time.Now(), Rebuilding: true, Target: target, Owner: r.stats.Owner}
		changed, sameGen = true, true
	case p.Generation == r.gen:
		sameGen = true
		if r.awaitGen <= r.gen && r.pos.Less(p.Position) {
			r.pos, changed = p.Position, true
		}
	}
	if p.Requested > r.gen && p.Requested > r.awaitGen {
		// A rebuild is on its way: stop claiming the old rows are current,
		// so reads here wait for the rebuilt read model instead.
		r.awaitGen = p.Requested
		r.pos = events.Position{}
		r.stats = Stats{Name: r.Name(), Since: time.Now(), Rebuilding: true, Target: head, Owner: r.stats.Owner}
		changed, sameGen = true, false
	}
	if !changed {
		return
	}
	if announced && sameGen {
		r.stats.Applied = p.Applied
	}
	if !r.stats.Ready && !r.pos.Less(r.stats.Target) && r.awaitGen <= r.gen {
		r.stats.Rebuilding, r.stats.Ready = false, true
	}
	if announced {
		r.stats.CaughtUp = p.CaughtUp && r.stats.Ready
	}
	r.moved(false)
}

// syncGeneration, for an owner, reads the stored generation: after a
// takeover or a reset it is the one announcements carry. A rebuild that
// was requested and not yet done is started first.
func (r *Runner) syncGeneration(ctx context.Context) error {
	if r.own == nil || r.own.Shared == nil {
		return nil
	}
	p, err := r.own.Shared.Progress(ctx, r.Name())
	if err != nil {
		return fmt.Errorf("shared progress: %w", err)
	}
	r.mu.Lock()
	if r.genKnown && p.Generation != r.gen {
		r.pos = events.Position{} // the rows were rebuilt since this node knew them
	}
	learned := !r.genKnown || p.Generation != r.gen
	if learned {
		r.gen, r.genKnown = p.Generation, true
		r.moved(false)
	}
	r.mu.Unlock()
	if learned {
		r.kickAnnounce()
	}
	if p.Requested > p.Generation {
		return rebuildRequest{}
	}
	return nil
}

// rebuildPending says whether storage holds a rebuild request newer than
// the generation this node knows.
func (r *Runner) rebuildPending(ctx context.Context) (bool, error) {
	if r.own == nil || r.own.Shared == nil {
		return false, nil
	}
	p, err := r.own.Shared.Progress(ctx, r.Name())
	if err != nil {
		return false, fmt.Errorf("shared progress: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return p.Requested > r.gen, nil
}

// rebuildWait bounds how long a rebuild request waits for the owner to
// reset the read model.
func (r *Runner) rebuildWait() time.Duration { return max(30*time.Second, 3*r.own.TTL) }

// rebuildShared records the request where every node sees it and waits
// until the read model's owner, on whichever node, has reset it.
func (r *Runner) rebuildShared(ctx context.Context) error {
	want, err := r.own.Shared.RequestRebuild(ctx, r.Name())
	if err != nil {
		return fmt.Errorf("request the rebuild of %s: %w", r.Name(), err)
	}
	r.mu.Lock()
	known, gen, pos := r.genKnown, r.gen, r.pos
	r.mu.Unlock()
	if known { // else the first poll sees the request
		r.observe(ctx, Progress{Generation: gen, Requested: want, Position: pos}, false)
	}
	ctx, cancel := context.WithTimeout(ctx, r.rebuildWait())
	defer cancel()
	for {
		ch := r.Changed()
		r.mu.Lock()
		done := r.genKnown && r.gen >= want
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w: %s generation %d", ErrRebuildPending, r.Name(), want)
			}
			return ctx.Err()
		}
	}
}
