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
