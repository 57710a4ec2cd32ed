// Package batch gathers concurrent requests into one round trip: the first
// request of a group waits a moment for others, then every request queued
// meanwhile goes to one call of the sender, and requests queued during
// that call go to the next one. Each request carries its own outcome and
// its caller waits for it, so the package knows nothing of what is sent.
package batch

import (
	"sync"
	"time"
)

// Group is a queue of requests and the goroutine, at most one at a time,
// that sends them. The zero value is ready.
type Group[R any] struct {
	mu      sync.Mutex
	queue   []R
	sending bool
}

// Add queues r. If no group is being gathered or sent, it starts one: a
// goroutine that waits gather, then calls send with everything queued
// until the queue is empty. send hands each request its outcome and
// returns those it leaves for its next call (they go before the requests
// queued since, in their order). The gather and send of the Add that
// starts a group are the ones used.
func (g *Group[R]) Add(r R, gather time.Duration, send func(batch []R) (later []R)) {
	g.mu.Lock()
	g.queue = append(g.queue, r)
	lead := !g.sending
	g.sending = true
	g.mu.Unlock()
	if lead {
		go g.flush(gather, send)
	}
}

func (g *Group[R]) flush(gather time.Duration, send func([]R) []R) {
	time.Sleep(gather)
	var later []R
	for {
		g.mu.Lock()
		batch := g.queue
		if len(later) > 0 {
			batch = append(later[:len(later):len(later)], batch...)
		}
		g.queue = nil
		if len(batch) == 0 {
			g.sending = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		later = send(batch)
	}
}
