package subscribe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/healthtech/partner-open-platform/events"
)

// One reader for the runners rebuilt together. A rebuild replays the whole
// log into every chosen read model; through subscriptions of their own,
// every event of the log passes once per read model (the read, the type
// checks, the hand-over from reader to applier), although each applies only
// its own types (the runners left out, paceGroup, read that way). A
// replayGroup reads the log once, up to its head as of the rebuild, only
// the events some member handles, and hands each member only its own
// events, in log order, with the count and last position of the others'
// events between them, so that each member's batches, checkpoints,
// Stats.Applied and the snapshot mark move as they do when it reads alone.
// Opening (decrypting, sealedStore) and decoding stay with each member's
// applier: on the group's one goroutine they would make the reader the
// longest stage of the replay.
//
// A member leaves when it becomes ready, when the reader reached its end
// (the member then follows the log with a subscription of its own from
// where it stands), or when its follow ends for any other reason (a
// failure, a lost lease, a stop, another rebuild): it then reads alone from
// its checkpoint, and the reader no longer waits for it. The reader waits
// for a member only while that member is following (its hand-over is full),
// and it stops once its last member left.

// errLeftGroup ends a follow fed by a replayGroup that no longer feeds it:
// the runner follows again at once, reading alone from its checkpoint.
var errLeftGroup = errors.New("left the rebuild's shared reader")

// sealedStore is a store that keeps events sealed beneath it
// (privacy.Store). A group's reader over it reads the inner store's events
// as stored, only the types some member handles, and each member opens its
// own on its applier's goroutine: opened on the reader's one goroutine,
// decryption made that goroutine the rebuild's longest stage.
type sealedStore interface {
	SubscribeSealed(ctx context.Context, after events.Position, wants func(eventType string) bool) (events.Subscription, error)
	OpenReplayed(ctx context.Context, page []events.Recorded) error
}

// replayGroup is the runners of one rebuild and their shared reader.
type replayGroup struct {
	store events.Store
	// sealed is store when it is a sealedStore: its members open what
	// the reader hands them.
	sealed sealedStore

	mu sync.Mutex
	// members are the runners the reader still waits for or feeds; a
	// member that left is deleted.
	members map[*Runner]*member
	// gathered: every member was asked to rebuild, so the reader may start
	// once each of them joined (or left).
	gathered bool
	started  bool
	// stop ends the reader once its last member left.
	stop context.CancelFunc
	// live counts the members not left, read by the reader at every event.
	live atomic.Int32
}

// member is one runner as the group's reader feeds it.
type member struct {
	run   *Runner
	wants func(eventType string) bool
	batch int
	// from is the position (commit) the member resumes after.
	from uint64
	// feed carries its events; the reader alone sends on it and closes it.
	feed chan fed
	// gone is closed when the member leaves.
	gone chan struct{}
	// dropped: the reader closed feed (the reader's own state).
	dropped bool
	// others and last are the others' events read since the member's last
	// hand-over (the reader's own state).
	others int
	last   events.Recorded
}

// newReplayGroup makes the group of runs, which must all follow store.
func newReplayGroup(store events.Store, runs []*Runner) *replayGroup {
	g := &replayGroup{store: store, members: make(map[*Runner]*member, len(runs))}
	g.sealed, _ = store.(sealedStore)
	for _, r := range runs {
		g.members[r] = &member{run: r, wants: r.wants(), batch: r.batchSize, gone: make(chan struct{})}
	}
	g.live.Store(int32(len(runs)))
	return g
}

// gatherDone says every member was asked to rebuild.
func (g *replayGroup) gatherDone() {
	g.mu.Lock()
	g.gathered = true
	g.startLocked()
	g.mu.Unlock()
}

// join makes r, resuming after position at, a member fed by the group's
// reader, and returns its feed; nil when r is not (or no longer) a member
// or the reader has started without it: r then reads alone. What the feed
// holds is sealed when g.sealed is set.
func (g *replayGroup) join(r *Runner, at uint64) <-chan fed {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[r]
	if m == nil || g.started || m.feed != nil {
		return nil
	}
	m.from, m.feed = at, make(chan fed, r.batchSize)
	g.startLocked()
	return m.feed
}

// leave removes r: the reader no longer feeds it nor waits for it.
func (g *replayGroup) leave(r *Runner) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[r]
	if m == nil {
		return
	}
	delete(g.members, r)
	close(m.gone)
	g.live.Add(-1)
	if g.started && len(g.members) == 0 {
		g.stop()
	}
	g.startLocked()
}

// startLocked starts the reader once every member was asked to rebuild
// and each one still a member has joined. The caller holds g.mu.
func (g *replayGroup) startLocked() {
	if g.started || !g.gathered || len(g.members) == 0 {
		return
	}
	list := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		if m.feed == nil {
			return
		}
		list = append(list, m)
	}
	g.started = true
	ctx, stop := context.WithCancel(context.Background())
	g.stop = stop
	go g.read(ctx, list)
}

// read feeds the members the log from the lowest position they resume
// after up to the log's head as of the start, then closes every feed still
// open: each member then reads on alone.
func (g *replayGroup) read(ctx context.Context, list []*member) {
	defer g.stop()
	defer func() {
		for _, m := range list {
			g.drop(m)
		}
	}()
	through, err := g.store.Head(ctx)
	if err != nil {
		return
	}
	from := list[0].from
	for _, m := range list[1:] {
		from = min(from, m.from)
	}
	if through.Commit <= from {
		return
	}
	// Each event type's members, as a bit per member of list.
	masks := map[string]uint64{}
	mask := func(eventType string) uint64 {
		b, ok := masks[eventType]
		if !ok {
			for i, m := range list {
				if m.wants(eventType) {
					b |= 1 << i
				}
			}
			masks[eventType] = b
		}
		return b
	}
	wanted := func(t string) bool { return mask(t) != 0 }
	var sub events.Subscription
	if g.sealed != nil {
		sub, err = g.sealed.SubscribeSealed(ctx, events.Position{Commit: from}, wanted)
	} else {
		sub, err = subscribeFor(ctx, g.store, events.Position{Commit: from}, through, wanted)
	}
	if err != nil {
		list[0].run.log.Warn("the rebuild's shared reader could not subscribe; each read model reads alone", "err", err)
		return
	}
	defer sub.Close()
	for g.live.Load() > 0 {
		rec, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				list[0].run.log.Warn("the rebuild's shared reader stopped; each read model reads on alone", "err", err)
			}
			return
		}
		b := mask(rec.Type)
		for i, m := range list {
			if m.dropped || rec.Position.Commit <= m.from {
				continue
			}
			if b&(1<<i) == 0 {
				m.others++
				m.last = rec
				if m.others >= m.batch {
					g.flush(ctx, m)
				}
				continue
			}
			g.flush(ctx, m)
			g.send(ctx, m, fed{rec: rec})
		}
		if !rec.Position.Less(through) {
			for _, m := range list {
				g.flush(ctx, m)
			}
			return
		}
	}
}

// flush hands m the others' events read since its last hand-over.
func (g *replayGroup) flush(ctx context.Context, m *member) {
	if m.others == 0 {
		return
	}
	g.send(ctx, m, fed{rec: m.last, others: m.others})
	m.others, m.last = 0, events.Recorded{}
}

// send hands it to m, waiting while m's feed is full unless m left (then
// m is dropped) or ctx ends.
func (g *replayGroup) send(ctx context.Context, m *member, it fed) {
	if m.dropped {
		return
	}
	select {
	case <-m.gone:
		g.drop(m)
		return
	default:
	}
	select {
	case m.feed <- it:
	default:
		select {
		case m.feed <- it:
		case <-m.gone:
			g.drop(m)
		case <-ctx.Done():
		}
	}
}

// drop closes m's feed: what it holds is still received, then the member's
// follow ends with errLeftGroup.
func (g *replayGroup) drop(m *member) {
	if !m.dropped {
		m.dropped = true
		close(m.feed)
	}
}

// wants is the types the projector handles (every type when it does not say).
func (r *Runner) wants() func(eventType string) bool {
	if f, ok := r.proj.(interface{ Handles(string) bool }); ok {
		return f.Handles
	}
	return func(string) bool { return true }
}
