package subscribe

import (
	"context"
	"sync"
)

// Pacing of the runners rebuilt together that the rebuild's one reader
// leaves out (replayGroup; read models shared between nodes, which reset
// on their owner). Each follows the log through its own subscription. The
// Postgres event store serves followers reading the same stretch from
// shared whole pages (the last 32 it keeps), and an embedded log from its
// block cache, but only while they stay within reach of one another; left
// alone, the read models that apply little run far ahead of the slowest
// one and each stretch is read and decoded again for every read model that
// falls out of reach. A paceGroup keeps them together: a runner's reader
// waits while it is more than paceWindow events past the slowest member
// still replaying. The rebuild ends with its slowest read model anyway, so
// the leaders lose nothing but CPU spent twice. A member leaves when it
// becomes ready (caught up with the log's head as of its reset) or stops
// following (failure, lost lease, stop, another rebuild), and a runner
// that never follows here never joins, so a stalled, finished or absent
// member never holds the others back.

// paceWindow is how far (in events) a rebuilding runner's reader may run
// ahead of the slowest one: half of what the stores keep for followers
// that share reads (events/postgres's last 32 pages of 256, events/bolt's
// catch-up cache of 8,192 events), which leaves room for the pages each
// reader holds and for the node's other catch-up readers.
const paceWindow = 4096

// paceStep is how often (in events) a reader reports its position and
// looks at the slowest one's: a page of the log, so the group's lock is
// taken once per page and reader rather than once per event.
const paceStep = 256

// paceGroup is the runners of one rebuild.
type paceGroup struct {
	mu sync.Mutex
	// pos is each following member's last position read (commit).
	pos map[*Runner]uint64
	// changed is closed (and replaced) whenever the slowest member may
	// have moved on.
	changed chan struct{}
	// gathered is closed once every member was asked to rebuild: until
	// then no member reads, so the first one reset does not run ahead of
	// those reset after it.
	gathered chan struct{}
	once     sync.Once
}

func newPaceGroup() *paceGroup {
	return &paceGroup{pos: map[*Runner]uint64{}, changed: make(chan struct{}), gathered: make(chan struct{})}
}

// gatherDone lets the members read.
func (g *paceGroup) gatherDone() { g.once.Do(func() { close(g.gathered) }) }

// join makes r a member reading after position at.
func (g *paceGroup) join(r *Runner, at uint64) {
	g.mu.Lock()
	g.pos[r] = at
	g.mu.Unlock()
}

// leave removes r; the others no longer wait for it.
func (g *paceGroup) leave(r *Runner) {
	g.mu.Lock()
	if _, ok := g.pos[r]; ok {
		delete(g.pos, r)
		g.wakeLocked()
	}
	g.mu.Unlock()
}

func (g *paceGroup) wakeLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// read records that r has read up to at, then waits, before r reads on,
// until r is within paceWindow of the slowest member (or is no member), or
// ctx ends.
func (g *paceGroup) read(ctx context.Context, r *Runner, at uint64) error {
	select {
	case <-g.gathered:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	if old, ok := g.pos[r]; ok && at > old {
		slowest := true
		for m, p := range g.pos {
			if m != r && p <= old {
				slowest = false
				break
			}
		}
		g.pos[r] = at
		if slowest {
			g.wakeLocked() // the slowest moved: a leader may go on
		}
	}
	for {
		mine, ok := g.pos[r]
		if !ok || mine <= g.minLocked()+paceWindow {
			g.mu.Unlock()
			return nil
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		g.mu.Lock()
	}
}

func (g *paceGroup) minLocked() uint64 {
	first, low := true, uint64(0)
	for _, p := range g.pos {
		if first || p < low {
			first, low = false, p
		}
	}
	return low
}
