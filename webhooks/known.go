package webhooks

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/privacy"
)

// maxKnown bounds the deliveries whose state the dispatcher keeps; beyond
// it an attempt loads its delivery's stream as it would without any.
const maxKnown = 16384

// knownDelivery is a delivery's state as of its stream's version, known
// without reading the stream because this dispatcher wrote that version.
// del is never written once stored (each change stores a new one), so an
// attempt may read it without a lock.
type knownDelivery struct {
	del *delivery
	// subject names the key its body is sealed with (privacy.Subject of the
	// created event), so an attempt sends a known body only while a read of
	// the stream would still reveal it.
	subject string
}

// knownSet is the deliveries the sender may attempt without loading them:
// only those pending or retrying (a done delivery's next attempt follows a
// resend). A state enters it as proposed, before the append that makes it,
// and becomes usable once that append succeeded: so whatever is appended
// after it (which expects its version) is proposed after it and replaces
// it, and a state learnt late can never stand over a newer one.
type knownSet struct {
	mu sync.Mutex
	m  map[string]knownEntry
}

type knownEntry struct {
	knownDelivery
	confirmed bool
}

// propose enters k, not yet usable, replacing what was known of its
// delivery: an append of it is about to be made.
func (s *knownSet) propose(k knownDelivery) {
	id := k.del.created.DeliveryID
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, had := s.m[id]; !had && len(s.m) >= maxKnown {
		return
	}
	if s.m == nil {
		s.m = map[string]knownEntry{}
	}
	s.m[id] = knownEntry{knownDelivery: k}
}

// confirm makes k usable once its append succeeded, unless another state
// was proposed since; a delivery no longer pending or retrying is dropped.
func (s *knownSet) confirm(k knownDelivery) {
	id := k.del.created.DeliveryID
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok || e.del != k.del {
		return
	}
	if k.del.status != domain.DeliveryPending && k.del.status != domain.DeliveryRetrying {
		delete(s.m, id)
		return
	}
	e.confirmed = true
	s.m[id] = e
}

// withdraw drops k after its append failed (or may have failed), unless
// another state was proposed since.
func (s *knownSet) withdraw(k knownDelivery) {
	id := k.del.created.DeliveryID
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[id]; ok && e.del == k.del {
		delete(s.m, id)
	}
}

// forget drops whatever is known of a delivery.
func (s *knownSet) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// forgetSubject drops every delivery whose body is sealed for subject (an
// erased person's), so no plaintext of theirs is kept after the erasure.
func (s *knownSet) forgetSubject(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.m {
		if e.subject == subject {
			delete(s.m, id)
		}
	}
}

// recall is the usable state known of a delivery.
func (s *knownSet) recall(id string) (knownDelivery, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	return e.knownDelivery, ok && e.confirmed
}

// after is a copy of del with p applied as the event appended at its next
// version, occurred at at.
func (del *delivery) after(p events.Payload, at time.Time) *delivery {
	next := *del
	next.apply(events.Envelope{Payload: p, Metadata: events.Metadata{OccurredAt: at}})
	next.version++
	return &next
}

// sealedReads is the store's word (privacy.Store) on whether the fields
// sealed for a subject read back as written right now: false once the
// subject's key is destroyed and this process's key cache knows it.
type sealedReads interface {
	Readable(ctx context.Context, subject string) bool
}

// readable reports whether a read of k's stream now would reveal the body
// k holds; true when the store seals nothing.
func (d *Dispatcher) readable(ctx context.Context, k knownDelivery) bool {
	g, ok := d.Store.(sealedReads)
	return !ok || g.Readable(ctx, k.subject)
}

// createdSubject is the key subject a delivery's created event is sealed
// with, from the event's plaintext data.
func createdSubject(id string, data []byte) string {
	return privacy.Subject(domain.DeliveryStream(id), (catalog.DeliveryCreated{}).EventType(), data)
}

// current is the delivery to attempt: as the dispatcher knows it when it is
// the sole writer (Sole) and the body is still readable, else loaded from
// its stream. known says it was not read: a decision that it is not due
// then asks the stream before it stands.
func (d *Dispatcher) current(ctx context.Context, id string) (del *delivery, subject string, known bool, err error) {
	if d.Sole {
		if k, ok := d.known.recall(id); ok {
			if d.readable(ctx, k) {
				return k.del, k.subject, true, nil
			}
			d.known.forgetSubject(k.subject) // erased: keep none of its plaintext
		}
	}
	del, subject, err = d.loadSubject(ctx, id)
	return del, subject, false, err
}

// appendKnown is an append to a delivery's stream whose result is k: a
// Sole dispatcher proposes k before it and confirms or withdraws it after.
func (d *Dispatcher) appendKnown(k knownDelivery, appendIt func() error) error {
	if !d.Sole || k.del == nil {
		return appendIt()
	}
	d.known.propose(k)
	err := appendIt()
	if err != nil {
		d.known.withdraw(k)
	} else {
		d.known.confirm(k)
	}
	return err
}

// appendKnownMany is appendKnown of one atomic append whose results are
// known (entries with a nil del are left out).
func (d *Dispatcher) appendKnownMany(known []knownDelivery, appendIt func() error) error {
	for _, k := range known {
		if k.del != nil {
			d.known.propose(k)
		}
	}
	err := appendIt()
	for _, k := range known {
		switch {
		case k.del == nil:
		case err != nil:
			d.known.withdraw(k)
		default:
			d.known.confirm(k)
		}
	}
	return err
}

// knownAfter is what appending p at at makes of del, for a Sole dispatcher
// (nil del otherwise: nothing is kept).
func (d *Dispatcher) knownAfter(del *delivery, p events.Payload, at time.Time, subject string) knownDelivery {
	if !d.Sole {
		return knownDelivery{}
	}
	return knownDelivery{del: del.after(p, at), subject: subject}
}

// knownOf is del as known by a Sole dispatcher (nil del otherwise).
func (d *Dispatcher) knownOf(del *delivery, subject string) knownDelivery {
	if !d.Sole {
		return knownDelivery{}
	}
	return knownDelivery{del: del, subject: subject}
}
