package webhooks

import (
	"context"
	"slices"
	"sync"
	"time"
)

// attemptContext is the context of an attempt's phases: the load and the
// POST end at the attempt's budget (the POST earlier at the client's
// timeout), the outcome's record at its own deadline, and the wait for the
// projection also when the sender stops. One is kept by each goroutine
// that runs attempts and set again for each phase: a context per phase
// (the budget's, the POST's, the record's, and a registration with the
// sender's context to end the wait) costs four timers, four contexts and
// that shared context's lock taken twice per attempt, about 15
// allocations (BenchmarkSoleAttemptOutOfProcess).
//
// Its values are the attempt's (set by begin); its cancellation is its
// own. A request's context that outlives the request (the transport's
// child, cancelled by its read loop once the answer's body is read) may
// see a later phase's end; it belongs to a finished request by then, and
// ending it changes nothing.
type attemptContext struct {
	mu     sync.Mutex
	values context.Context
	// deadline is when the phase ends (zero: never, or no phase runs).
	deadline time.Time
	// done is made on demand and closed at the phase's end; a phase after
	// an ended one starts with a new one.
	done chan struct{}
	err  error
	// waiting: the phase ends when the sender stops; stopped: it has.
	waiting, stopped bool
	// after are the functions registered by AfterFunc, run when the
	// phase ends.
	after  []afterFunc
	nextID uint64
	timer  *time.Timer
	// unregister ends the registration with the sender's context.
	unregister func() bool
}

type afterFunc struct {
	id uint64
	f  func()
}

// closedDone is the done channel of a phase that ended before anyone
// asked for it.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// newAttemptContext is an attempt context for the attempts run under
// sender: its waits end when sender does. close releases it.
func newAttemptContext(sender context.Context) *attemptContext {
	c := &attemptContext{values: context.Background()}
	c.timer = time.AfterFunc(time.Hour, c.fire)
	c.timer.Stop()
	c.unregister = context.AfterFunc(sender, c.senderStopped)
	return c
}

// close ends the context's use: no timer stays armed, and the sender's
// context no longer holds it.
func (c *attemptContext) close() {
	c.unregister()
	c.timer.Stop()
}

// begin starts a phase under values (an attempt's context, whose
// cancellation is not followed) ending at deadline (zero: none); the
// sender's stop does not end it.
func (c *attemptContext) begin(values context.Context, deadline time.Time) {
	c.mu.Lock()
	if c.err != nil {
		c.done, c.err = nil, nil
	}
	c.values, c.waiting = values, false
	c.unlock(c.arm(deadline))
}

// next starts the attempt's next phase, under the same values, ending at
// deadline (whether or not the one before ended).
func (c *attemptContext) next(deadline time.Time) {
	c.mu.Lock()
	values := c.values
	c.mu.Unlock()
	c.begin(values, deadline)
}

// narrow brings the running phase's end forward to deadline, if earlier.
func (c *attemptContext) narrow(deadline time.Time) {
	c.mu.Lock()
	var ended []afterFunc
	if c.err == nil && (c.deadline.IsZero() || deadline.Before(c.deadline)) {
		ended = c.arm(deadline)
	}
	c.unlock(ended)
}

// waitUntilStopped has the running phase end also when the sender stops
// (at once if it has).
func (c *attemptContext) waitUntilStopped() { c.noteStop(true, false) }

// senderStopped ends a waiting phase, and marks the sender stopped for
// the next one.
func (c *attemptContext) senderStopped() { c.noteStop(false, true) }

// noteStop notes that the phase waits for the sender's stop (waiting) or
// that the sender stopped, and ends a waiting phase of a stopped sender.
func (c *attemptContext) noteStop(waiting, stopped bool) {
	c.mu.Lock()
	c.waiting = c.waiting || waiting
	c.stopped = c.stopped || stopped
	var ended []afterFunc
	if c.waiting && c.stopped && c.err == nil {
		ended = c.end(context.Canceled)
	}
	c.unlock(ended)
}

// finish ends the phase: no timer stays armed and the context holds
// neither a deadline nor the attempt's values until the next begin.
func (c *attemptContext) finish() {
	c.mu.Lock()
	c.timer.Stop()
	c.deadline, c.waiting = time.Time{}, false
	c.values = context.Background()
	c.mu.Unlock()
}

// arm sets the phase's end (zero: none), ending it at once when deadline
// has passed (c.mu is held; see end for what it returns).
func (c *attemptContext) arm(deadline time.Time) []afterFunc {
	c.deadline = deadline
	if deadline.IsZero() {
		c.timer.Stop()
		return nil
	}
	if d := time.Until(deadline); d > 0 {
		c.timer.Reset(d)
		return nil
	}
	c.timer.Stop()
	return c.end(context.DeadlineExceeded)
}

// fire is the timer's: the phase ends if its deadline has passed (a
// timer armed for an earlier phase or deadline may fire late).
func (c *attemptContext) fire() {
	c.mu.Lock()
	var ended []afterFunc
	if c.err == nil && !c.deadline.IsZero() {
		ended = c.arm(c.deadline)
	}
	c.unlock(ended)
}

// end ends the phase with err (c.mu is held) and returns what was
// registered, for unlock to run once c.mu is released: a registered
// function may stop another registration, which takes c.mu.
func (c *attemptContext) end(err error) []afterFunc {
	c.err = err
	if c.done == nil {
		c.done = closedDone
	} else {
		close(c.done)
	}
	after := c.after
	c.after = nil
	return after
}

// unlock releases c.mu and runs the functions of an ended phase.
func (c *attemptContext) unlock(ended []afterFunc) {
	c.mu.Unlock()
	for _, a := range ended {
		a.f()
	}
}

func (c *attemptContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, !c.deadline.IsZero()
}

func (c *attemptContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *attemptContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *attemptContext) Value(key any) any {
	c.mu.Lock()
	values := c.values
	c.mu.Unlock()
	return values.Value(key)
}

// AfterFunc runs f when the phase ends (at once if it has), as the
// context package's children and context.AfterFunc ask of a context of
// their own making; stop says whether it kept f from running.
func (c *attemptContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.nextID++
	id := c.nextID
	c.after = append(c.after, afterFunc{id: id, f: f})
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.IndexFunc(c.after, func(a afterFunc) bool { return a.id == id })
		if i < 0 {
			return false
		}
		c.after = slices.Delete(c.after, i, i+1)
		return true
	}
}
