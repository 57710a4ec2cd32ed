package webhooks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// A batch the deliveries projection applies on the sender's node prompts a
// scan only when it may have made due a delivery the sender was not handed.
func TestDueNewsIsWhatTheSenderWasNotHanded(t *testing.T) {
	d := &Dispatcher{}
	d.handed.add("handed")
	retry := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for _, c := range []struct {
		what string
		p    events.Payload
		news bool
	}{
		{"the creation of a delivery handed over", &catalog.DeliveryCreated{DeliveryID: "handed", Deliver: true}, false},
		{"the same creation applied again (forgotten once applied)", &catalog.DeliveryCreated{DeliveryID: "handed", Deliver: true}, true},
		{"a creation not handed over (another node's)", &catalog.DeliveryCreated{DeliveryID: "other", Deliver: true}, true},
		{"a creation not to send", &catalog.DeliveryCreated{DeliveryID: "skipped"}, false},
		{"an outcome that ends the delivery", &catalog.DeliveryAttempted{DeliveryID: "handed", Outcome: domain.OutcomeDelivered}, false},
		{"an outcome that schedules a retry", &catalog.DeliveryAttempted{DeliveryID: "handed", Outcome: domain.OutcomeRetry, NextAttemptAt: &retry}, true},
		{"a resend", &catalog.DeliveryResendRequested{DeliveryID: "handed"}, true},
		{"an erasure", &catalog.UserErased{OpenUserID: 1}, false},
	} {
		if got := d.dueNews([]events.Envelope{{Payload: c.p}}); got != c.news {
			t.Errorf("%s: news %v, want %v", c.what, got, c.news)
		}
	}
	// One batch with news anywhere in it is news, and forgets every
	// creation it holds that was handed over.
	d.handed.add("a")
	d.handed.add("b")
	batch := []events.Envelope{{Payload: &catalog.DeliveryCreated{DeliveryID: "a", Deliver: true}},
		{Payload: &catalog.DeliveryResendRequested{DeliveryID: "x"}}, {Payload: &catalog.DeliveryCreated{DeliveryID: "b", Deliver: true}}}
	if !d.dueNews(batch) {
		t.Error("a batch holding a resend: no news")
	}
	if d.handed.take("a") || d.handed.take("b") {
		t.Error("creations applied are still remembered as handed over")
	}
}

// Beyond maxHanded the oldest delivery handed over is forgotten: its
// creation, applied, then prompts a scan.
func TestHandedSetForgetsTheOldestBeyondItsBound(t *testing.T) {
	var h handedSet
	for i := range maxHanded + 1 {
		h.add(fmt.Sprintf("d%d", i))
	}
	if h.take("d0") {
		t.Error("the oldest of maxHanded+1 is still remembered")
	}
	if !h.take("d1") || !h.take(fmt.Sprintf("d%d", maxHanded)) {
		t.Error("the newest maxHanded are not all remembered")
	}
}

// appliedMoves is the deliveries projection applying its batches on the
// sender's node: apply shows a batch to AfterApply's f, then moves it (as
// subscribe.Runner does); hear is a move learnt from elsewhere.
type appliedMoves struct {
	*moves
	heard *moves
	f     func(batch []events.Envelope)
}

func (a *appliedMoves) Heard() <-chan struct{}                     { return a.heard.Changed() }
func (a *appliedMoves) AfterApply(f func(batch []events.Envelope)) { a.f = f }
func (a *appliedMoves) apply(ps ...events.Payload) {
	batch := make([]events.Envelope, len(ps))
	for i, p := range ps {
		batch[i] = events.Envelope{Payload: p}
	}
	a.f(batch)
	a.move()
}
func (a *appliedMoves) hear() { a.heard.move(); a.move() }

// The sender of a node that applies the deliveries projection is prompted
// to scan by a batch only when it holds due news: the creation of a
// delivery handed to it, or an outcome ending one, leave it asleep; a
// resend, a retry, a creation it was not handed and a move heard from
// another node (or a takeover) mark the read model for a scan.
func TestSenderScansForAppliedBatchesWithDueNewsOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	deliveries := &appliedMoves{moves: newMoves(), heard: newMoves()}
	d := &Dispatcher{Deliveries: &dueSchedule{}, Clock: &jumpClock{now: t0}, Projected: deliveries, AppsReady: newMoves(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d.handover.init()
	s := d.newSendLoop(ctx)
	s.followApplies()
	if s.applied == nil || deliveries.f == nil {
		t.Fatal("the sender does not follow the batches applied here")
	}
	d.handover.open(true)
	s.watch()
	s.refill(t0, 1) // the start scan: nothing due

	created := catalog.DeliveryCreated{DeliveryID: "d1", AppID: 1, EndpointID: domain.DefaultEndpointID, Deliver: true}
	d.handOver(ctx, created, nil)
	deliveries.apply(&created)
	waitReturns(t, s, t0, "a delivery was handed over")
	s.takeHandedOver()
	deliveries.apply(&catalog.DeliveryAttempted{DeliveryID: "d1", Outcome: domain.OutcomeDelivered})
	s.wake()
	waitReturns(t, s, t0, "a worker freed up")
	s.watch()
	if s.dirty || s.nextStale {
		t.Fatalf("after the creation handed over and its outcome were applied: dirty %v, next due stale %v, want neither", s.dirty, s.nextStale)
	}

	retry := t0.Add(time.Minute)
	for _, c := range []struct {
		what string
		move func()
	}{
		{"a resend applied", func() { deliveries.apply(&catalog.DeliveryResendRequested{DeliveryID: "d1"}) }},
		{"a retry applied", func() {
			deliveries.apply(&catalog.DeliveryAttempted{DeliveryID: "d1", Outcome: domain.OutcomeRetry, NextAttemptAt: &retry})
		}},
		{"another node's creation applied", func() {
			deliveries.apply(&catalog.DeliveryCreated{DeliveryID: "d2", AppID: 1, Deliver: true})
		}},
		{"a move heard from another node", deliveries.hear},
	} {
		s.dirty, s.nextStale = false, false
		s.watch()
		c.move()
		waitReturns(t, s, t0, c.what)
		if !s.dirty || !s.nextStale {
			t.Errorf("after %s: dirty %v, next due stale %v, want both", c.what, s.dirty, s.nextStale)
		}
	}
}
