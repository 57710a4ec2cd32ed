package lease

import (
	"context"
	"sync"
	"time"
)

// Load is how the leases of a store are spread over the nodes sharing it.
type Load struct {
	// Nodes counts the holders that take part (alive and campaigning).
	Nodes int
	// Held counts the live leases the asking holder holds.
	Held int
	// Least is the fewest live leases any taking-part holder holds (0 when
	// one holds none).
	Least int
}

// Balancer is a Store that knows its Load, so that Campaign spreads leases
// over the nodes instead of letting the first node up keep them all: a node
// holding more than another defers taking a free lease for two polls
// (the other takes it), and a node holding two or more above the least
// loaded hands one lease over now and then. Both adapters implement it.
type Balancer interface {
	Load(ctx context.Context, holder string) (Load, error)
}

// Poll is how often a campaign tries a lease another holder has: a free
// lease (released, or its holder's session ended) is taken within it.
// One cheap statement per standing-by lease and poll on Postgres.
const Poll = 250 * time.Millisecond

// loadFresh is how long a Load read serves a holder's campaigns and
// renewals before it is read again.
const loadFresh = time.Second

// loads caches Load per store and holder, and when a holder last handed a
// lease over, so that its leases hand over one at a time.
var loads = struct {
	sync.Mutex
	m map[loadKey]*loadEntry
}{m: map[loadKey]*loadEntry{}}

type loadKey struct {
	store  Balancer
	holder string
}

type loadEntry struct {
	load   Load
	read   time.Time
	handed time.Time
	// reading is closed when the read under way ends: a holder's leases
	// renew at the same moments (onGrid), and each reading the load on its
	// own was a statement per lease instead of one per node.
	reading chan struct{}
}

// loadOf returns holder's Load on s (cached), and false when s does not
// balance or the load could not be read.
func loadOf(ctx context.Context, s Store, holder string) (Load, bool) {
	b, ok := s.(Balancer)
	if !ok {
		return Load{}, false
	}
	k := loadKey{b, holder}
	for {
		loads.Lock()
		e := loads.m[k]
		if e == nil {
			e = &loadEntry{}
			loads.m[k] = e
		}
		if !e.read.IsZero() && time.Since(e.read) < loadFresh {
			l := e.load
			loads.Unlock()
			return l, true
		}
		if wait := e.reading; wait != nil {
			loads.Unlock()
			select {
			case <-wait:
				continue // read by the other caller (or failed: try it here)
			case <-ctx.Done():
				return Load{}, false
			}
		}
		done := make(chan struct{})
		e.reading = done
		loads.Unlock()
		l, err := b.Load(ctx, holder)
		loads.Lock()
		e.reading = nil
		if err == nil {
			e.load, e.read = l, time.Now()
		}
		loads.Unlock()
		close(done)
		if err != nil {
			return Load{}, false
		}
		return l, true
	}
}

// forgetLoad drops the cached Load after holder's leases changed.
func forgetLoad(s Store, holder string) {
	if b, ok := s.(Balancer); ok {
		loads.Lock()
		if e := loads.m[loadKey{b, holder}]; e != nil {
			e.read = time.Time{}
		}
		loads.Unlock()
	}
}

// deferral is how many polls holder lets pass before taking a free lease:
// none while no other node holds fewer leases, else two, time for that
// node (polling as often) to take it. A lease nobody else wants is still
// taken, only half a second later: a dead node's leases move within a
// second either way.
func deferral(ctx context.Context, s Store, holder string) int {
	l, ok := loadOf(ctx, s, holder)
	if !ok || l.Nodes < 2 || l.Held <= l.Least {
		return 0
	}
	return 2
}

// shouldHandOver says whether holder, holding a lease since since, should
// give it up for a less loaded node: it holds two or more above the least
// loaded, has held this lease half a ttl, and handed none over within half
// a ttl. It records the hand-over when it says yes.
func shouldHandOver(ctx context.Context, s Store, holder string, since time.Time, ttl time.Duration) bool {
	ttl /= 2
	if time.Since(since) < ttl {
		return false
	}
	l, ok := loadOf(ctx, s, holder)
	if !ok || l.Nodes < 2 || l.Held-l.Least < 2 {
		return false
	}
	b := s.(Balancer)
	loads.Lock()
	defer loads.Unlock()
	e := loads.m[loadKey{b, holder}]
	if e == nil || time.Since(e.handed) < ttl {
		return false
	}
	e.handed, e.read = time.Now(), time.Time{}
	return true
}
