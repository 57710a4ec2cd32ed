package webhooks

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// gatedLog holds every outcome append until open is closed, as a log
// whose commit is slow would.
type gatedLog struct {
	events.Store
	open    chan struct{}
	waiting atomic.Int32
}

func (g *gatedLog) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if len(evs) > 0 && evs[0].Type == (catalog.DeliveryAttempted{}).EventType() {
		g.waiting.Add(1)
		<-g.open
	}
	return g.Store.Append(ctx, stream, expected, evs...)
}

// With one worker, a sole sender posts the next delivery while the
// previous one's outcome still waits for the log (its outcome then shares
// a commit with the next ones), yet sends neither twice: the claim is held
// until the outcome is written, and both outcomes are recorded once the
// log moves. A sender of shared deliveries keeps its worker until the
// outcome is written, so the second POST waits for the first outcome.
func TestSoleSenderPostsOnWhileAnOutcomeWaitsForTheLog(t *testing.T) {
	for _, sole := range []bool{true, false} {
		f := newKnownFixture(t, sole)
		gate := &gatedLog{Store: f.d.Store, open: make(chan struct{})}
		f.d.Store = gate
		f.d.Workers, f.d.Deliveries, f.d.Claims = 1, &dueSchedule{}, &claimAll{held: map[string]bool{}}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); _ = f.d.RunSender(ctx) }()
		until := func(what string, ok func() bool) {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("sole=%v: %s did not happen within 10 s", sole, what)
				}
			}
		}
		until("the sender's start", func() bool {
			f.d.handover.mu.Lock()
			defer f.d.handover.mu.Unlock()
			return f.d.handover.on
		})
		f.create(t, "d1")
		f.create(t, "d2")
		until("the first outcome's append", func() bool { return gate.waiting.Load() >= 1 })
		if sole {
			until("the second POST", func() bool { return len(f.rcv.posts()) == 2 })
			until("the second outcome's append", func() bool { return gate.waiting.Load() == 2 })
		} else {
			time.Sleep(200 * time.Millisecond) // what must not happen has had time to
			if got := f.rcv.posts(); len(got) != 1 {
				t.Fatalf("sole=false: %v posted while the first outcome waits, want one POST", got)
			}
		}
		close(gate.open)
		until("both outcomes", func() bool {
			return equalStrings(f.outcomes(t, "d1"), []string{"created", "attempt delivered"}) &&
				equalStrings(f.outcomes(t, "d2"), []string{"created", "attempt delivered"})
		})
		cancel()
		<-stopped
		if got := f.rcv.posts(); len(got) != 2 || f.rcv.badSig != 0 {
			t.Fatalf("sole=%v: receiver got %v (%d bad signatures), want d1 and d2 once each", sole, got, f.rcv.badSig)
		}
	}
}
