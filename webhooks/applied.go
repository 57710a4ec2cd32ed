package webhooks

import (
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// appliedHere is the deliveries projection's progress when it can show the
// sender the batches it applies on this node (subscribe.Runner). The sender
// then scans after a batch applied here only when the batch holds something
// it does not know of (dueNews), and after every other move (Heard: the
// owner on another node announced progress, a takeover, a reset), instead
// of after every move: on a node that applies the deliveries and creates
// them, most moves are the creations it handed to its own sender and the
// outcomes of its own attempts, and each prompted a scan that found
// nothing new (a Postgres transaction each).
type appliedHere interface {
	// Heard is closed at the next move not made by a batch applied here.
	Heard() <-chan struct{}
	// AfterApply has f see every batch applied here, once committed.
	AfterApply(f func(batch []events.Envelope))
}

// maxHanded bounds the deliveries remembered as handed over until the
// projection applies their creation here; one forgotten (or applied on
// another node) costs a scan, nothing else.
const maxHanded = 1024

// handedSet is the deliveries handed to this node's sender whose creation
// the projection has not applied here yet, the oldest forgotten first.
type handedSet struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

// add remembers id, forgetting the oldest beyond maxHanded.
func (h *handedSet) add(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids, h.ring = make(map[string]struct{}, maxHanded), make([]string, maxHanded)
	}
	if old := h.ring[h.next]; old != "" {
		delete(h.ids, old)
	}
	h.ring[h.next], h.ids[id] = id, struct{}{}
	h.next = (h.next + 1) % maxHanded
}

// take forgets id and says whether it was remembered.
func (h *handedSet) take(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.ids[id]
	delete(h.ids, id)
	return ok
}

// appliedNews is what the sender learns from the batches applied here: it
// closes (and replaces) ch after a batch with due news.
type appliedNews struct {
	mu sync.Mutex
	ch chan struct{}
}

// changed is closed after the next batch with due news.
func (n *appliedNews) changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *appliedNews) tell() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
	}
	n.ch = make(chan struct{})
}

// noteApplied tells the sender about a batch the deliveries projection
// applied here when it holds due news.
func (d *Dispatcher) noteApplied(batch []events.Envelope) {
	if d.dueNews(batch) {
		d.news.tell()
	}
}

// dueNews says whether a batch applied to the deliveries read model may
// have made a delivery due, or due earlier, that this node's sender does
// not know of: a creation not handed to it (another node's, or one its
// mailbox refused), a resend, or an outcome that schedules a retry (the
// sender learns the retry's time from the scan). The creations it was
// handed are due already and in its hands; an outcome that ends a delivery
// and an erasure only take deliveries out of the queue. Every creation
// handed over is forgotten here, news or not.
func (d *Dispatcher) dueNews(batch []events.Envelope) bool {
	news := false
	for _, env := range batch {
		switch p := env.Payload.(type) {
		case *catalog.DeliveryCreated:
			if p.Deliver && !d.handed.take(p.DeliveryID) {
				news = true
			}
		case *catalog.DeliveryResendRequested:
			news = true
		case *catalog.DeliveryAttempted:
			news = news || p.NextAttemptAt != nil
		}
	}
	return news
}
