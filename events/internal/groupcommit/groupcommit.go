// Package groupcommit is the queue in front of an event store's one
// committer. Appends wait in it; the committer takes what was queued while
// its last transaction ran as one group and writes the group in one
// transaction, so concurrent appends share a commit (an fsync, a WAL
// flush). How a group is written, and how long a committer waits for more,
// is the store's; queuing, waiting for the outcome and closing are here.
package groupcommit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Append is one queued append (one part) or multi-stream append (several,
// all or none) and, once the committer calls Done, its outcome.
type Append struct {
	Ctx   context.Context
	Parts []events.StreamAppend
	Res   []events.AppendResult // per part
	Err   error
	// Wrote is whether the group being committed writes events of this
	// append (the committer's own bookkeeping).
	Wrote bool
	// Queued is when a deferrable append (events.IsDeferrable) was queued;
	// zero for the others.
	Queued time.Time
	done   chan struct{}
}

// Done hands the outcome (Res or Err) to the waiting Submit. The committer
// calls it once per append it received.
func (a *Append) Done() { close(a.done) }

// Queue is the appends waiting for a committer.
type Queue struct {
	mu        sync.RWMutex // held shared while queuing, exclusively by Close
	closed    atomic.Bool
	c         chan *Append
	committer sync.WaitGroup
}

// Start makes a queue holding up to size appends and runs commit as its
// committer: commit receives from q.C() until it is closed and drained, and
// calls Done on every append it received.
func Start(size int, commit func(q *Queue)) *Queue {
	q := &Queue{c: make(chan *Append, size)}
	q.committer.Add(1)
	go func() {
		defer q.committer.Done()
		commit(q)
	}()
	return q
}

// C is what the committer receives from; Close closes it.
func (q *Queue) C() <-chan *Append { return q.c }

// Len is how many appends wait for the committer.
func (q *Queue) Len() int { return len(q.c) }

// Closed reports whether Close was called.
func (q *Queue) Closed() bool { return q.closed.Load() }

// Submit queues parts and waits for their outcome. It fails with
// events.ErrClosed once the queue is closed, and with ctx's error if ctx
// ends before the append is queued.
func (q *Queue) Submit(ctx context.Context, parts []events.StreamAppend) ([]events.AppendResult, error) {
	a := &Append{Ctx: ctx, Parts: parts, done: make(chan struct{})}
	if events.IsDeferrable(ctx) {
		a.Queued = time.Now()
	}
	q.mu.RLock()
	if q.closed.Load() {
		q.mu.RUnlock()
		return nil, events.ErrClosed
	}
	select {
	case q.c <- a:
		q.mu.RUnlock()
	case <-ctx.Done():
		q.mu.RUnlock()
		return nil, ctx.Err()
	}
	// Once queued, wait for the outcome even if ctx ends: the committer
	// skips appends whose context ended before it reached them, and a
	// written one must be reported as written.
	<-a.done
	if a.Err != nil {
		return nil, a.Err
	}
	return a.Res, nil
}

// Close stops taking appends and returns once the committer has written
// what was queued and returned.
func (q *Queue) Close() {
	q.mu.Lock()
	if !q.closed.Swap(true) {
		close(q.c)
	}
	q.mu.Unlock()
	q.committer.Wait()
}

// Gather appends to group whatever is queued, without waiting, until group
// holds max appends or the queue is closed.
func (q *Queue) Gather(group []*Append, max int) []*Append {
	for len(group) < max {
		select {
		case a, ok := <-q.c:
			if !ok {
				return group
			}
			group = append(group, a)
		default:
			return group
		}
	}
	return group
}

// MaxDefer is how long a group of deferrable appends (events.Deferrable:
// the webhook dispatcher's delivery creations and attempt outcomes) waits,
// from when its oldest was queued, for a plain append to share its
// transaction. On a node taking calls one at a time each call then pays one
// commit, not one more for the delivery its event makes and one more for
// the delivery's outcome. 10 ms covers the gap between calls at offered
// rates from 100/s up, where a commit of its own is most of a call's cost,
// and is a tenth of the webhooks' ack-to-receipt budget (p99 under 100 ms);
// below 100/s a creation waits its 10 ms and commits alone, as it would
// without it.
const MaxDefer = 10 * time.Millisecond

// DeferEnough is how many deferrable appends stop waiting for company: that
// many already share their transaction's fixed cost (a lone commit's
// eighth), and a backlog being drained (every attempt's outcome deferrable,
// no call in sight) must not have its senders held for MaxDefer at each
// commit.
const DeferEnough = 8

// Deferral holds a group of deferrable appends until a plain append can
// share its transaction. A store whose every transaction pays a fixed cost
// (an fsync, a round trip, a WAL flush, the wake-up of every follower) has
// its committer pass each gathered group through Hold. The zero Deferral
// holds nothing.
type Deferral struct {
	// Max bounds the wait, from when the group's oldest append was queued.
	Max time.Duration
	// Enough is how many deferrable appends commit without waiting.
	Enough int
	// Waiting, when set (tests only), runs when a group of n deferrable
	// appends waits for a plain one, and again as each joins.
	Waiting func(n int)

	timer *time.Timer
}

// Defaults is the deferral a store uses: MaxDefer and DeferEnough.
func Defaults() Deferral { return Deferral{Max: MaxDefer, Enough: DeferEnough} }

// Hold returns group, grown by what q received while it waited. A group
// whose every append is deferrable and that holds fewer than Enough waits
// until a plain append is queued (which joins it), Enough are held, Max has
// passed since its oldest was queued, or q is closed; any other group is
// returned at once. A plain append therefore never waits for a deferrable
// one. Only the committer calls it.
func (d *Deferral) Hold(q *Queue, group []*Append) []*Append {
	if d.Max <= 0 || len(group) >= d.Enough || !allDeferrable(group) {
		return group
	}
	wait := d.Max - time.Since(group[0].Queued)
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
	} else {
		d.timer.Reset(wait)
	}
	defer d.timer.Stop()
	for len(group) < d.Enough {
		if d.Waiting != nil {
			d.Waiting(len(group))
		}
		select {
		case p, ok := <-q.c:
			if !ok {
				return group
			}
			group = append(group, p)
			if p.Queued.IsZero() {
				return group
			}
		case <-d.timer.C:
			return group
		}
	}
	return group
}

// allDeferrable reports whether every append of group may wait for company.
func allDeferrable(group []*Append) bool {
	for _, p := range group {
		if p.Queued.IsZero() {
			return false
		}
	}
	return true
}
