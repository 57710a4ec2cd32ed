package webhooks

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// heldProjection is a deliveries projection that never applies an
// outcome: WaitFor returns only when its context ends.
type heldProjection struct {
	*moves
	once    sync.Once
	waiting chan struct{} // closed when an attempt waits
}

func (p *heldProjection) WaitFor(ctx context.Context, _ events.Position) error {
	p.once.Do(func() { close(p.waiting) })
	<-ctx.Done()
	return ctx.Err()
}

// An attempt's wait for its outcome's projection ends when the sender
// stops, and a stop during the POST cuts neither the POST nor the
// outcome's record. (An attempt that waited out the record's 10 s would
// fail the bound below.)
func TestAttemptEndsItsWaitWhenTheSenderStopsAndRecordsItsOutcome(t *testing.T) {
	for _, during := range []string{"wait", "post"} {
		t.Run("stop during the "+during, func(t *testing.T) {
			f := newKnownFixture(t, true)
			proj := &heldProjection{moves: newMoves(), waiting: make(chan struct{})}
			f.d.Projected = proj
			sender, stop := context.WithCancel(context.Background())
			defer stop()
			ac := newAttemptContext(sender)
			defer ac.close()
			if during == "post" {
				next := f.d.Client.Transport
				f.d.Client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
					stop()
					return next.RoundTrip(r)
				})
			}
			f.create(t, "d1")
			key := endpointKey{app: 1}
			app, _ := f.d.Apps.ByID(1)
			url := endpointURL(app, 0)
			f.eps.acquire(key, url, time.Now())
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				f.d.attempt(sender, ac, f.eps, claimed{Claim: Claim{DeliveryID: "d1"}, ep: key, url: url}, time.Now(), func() {}, func() {})
			}()
			if during == "wait" {
				<-proj.waiting
				stop()
			}
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the attempt still waits for its projection 5 s after the sender stopped")
			}
			if got := f.outcomes(t, "d1"); !equalStrings(got, []string{"created", "attempt delivered"}) {
				t.Fatalf("d1's stream: %v", got)
			}
			if p := f.rcv.posts(); !equalStrings(p, []string{"d1"}) {
				t.Fatalf("receiver got %v", p)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
