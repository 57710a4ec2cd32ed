package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// deferStore opens a store on url whose deferrable appends wait up to
// deferFor, and whose committer reports on the returned channel each time a
// group of deferrable appends waits (with its size).
func deferStore(t *testing.T, url string, deferFor time.Duration) (*Store, <-chan int) {
	t.Helper()
	s := openURL(t, url)
	deferring := make(chan int, 64)
	s.deferral.Max = deferFor
	s.deferral.Waiting = func(n int) { deferring <- n }
	return s, deferring
}

func appendNew(ctx context.Context, s *Store, stream string) error {
	_, err := s.Append(ctx, stream, events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "deferral.appended", Data: []byte(`{}`)})
	return err
}

// waitDeferring waits until the committer holds n deferrable appends, or
// fails if an append started in done was answered first.
func waitDeferring(t *testing.T, deferring <-chan int, done <-chan error, n int) {
	t.Helper()
	for {
		select {
		case got := <-deferring:
			if got == n {
				return
			}
		case err := <-done:
			t.Fatalf("a deferrable append was committed (err %v) before %d deferrable appends waited together", err, n)
		case <-time.After(20 * time.Second):
			t.Fatalf("no group of %d deferrable appends waited", n)
		}
	}
}

// TestDeferrableAppendsRideAPlainOnesTransaction: a delivery's creation
// and an attempt's outcome (deferrable) wait for a call's append and the
// store writes the three in one transaction; the call is not held, and a
// second node reads all three in the queue's order.
func TestDeferrableAppendsRideAPlainOnesTransaction(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := pgtest.New(t)
	s, deferring := deferStore(t, url, time.Hour)
	before := int64(s.commits.Load())
	lazy := events.Deferrable(ctx)
	done := make(chan error, 2)
	go func() { done <- appendNew(lazy, s, "delivery-1") }()
	waitDeferring(t, deferring, done, 1)
	go func() { done <- appendNew(lazy, s, "delivery-0") }()
	waitDeferring(t, deferring, done, 2)
	if err := appendNew(ctx, s, "user-1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := int64(s.commits.Load()) - before; got != 1 {
		t.Fatalf("two deferrable appends and a plain one took %d transactions, want 1", got)
	}
	other := openURL(t, url)
	recs, err := other.ReadAll(ctx, events.Position{}, 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("another node reads %d events, %v; want 3", len(recs), err)
	}
	if recs[0].Stream != "delivery-1" || recs[1].Stream != "delivery-0" || recs[2].Stream != "user-1" {
		t.Fatalf("log order %s, %s, %s; want the queue's order", recs[0].Stream, recs[1].Stream, recs[2].Stream)
	}
}

// TestDeferrableAppendAloneIsCommittedAfterItsWait: with no call to ride,
// a deferrable append commits on its own once its wait is over.
func TestDeferrableAppendAloneIsCommittedAfterItsWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, deferring := deferStore(t, pgtest.New(t), 5*time.Millisecond)
	if err := appendNew(events.Deferrable(ctx), s, "delivery"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-deferring:
		if n != 1 {
			t.Fatalf("the committer deferred %d appends, want 1", n)
		}
	default:
		t.Fatal("the deferrable append did not wait for company")
	}
	if got := s.commits.Load(); got != 1 {
		t.Fatalf("the deferrable append took %d transactions, want 1", got)
	}
	if recs, err := s.ReadStream(ctx, "delivery", 0, 0); err != nil || len(recs) != 1 {
		t.Fatalf("read: %d events, %v", len(recs), err)
	}
}

// TestDeferrableAppendHeldAtCloseIsDurable: closing the store while a
// deferrable append waits commits it, and another node reads it.
func TestDeferrableAppendHeldAtCloseIsDurable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := pgtest.New(t)
	s, deferring := deferStore(t, url, time.Hour)
	done := make(chan error, 1)
	go func() { done <- appendNew(events.Deferrable(ctx), s, "delivery") }()
	waitDeferring(t, deferring, done, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the held append: %v", err)
	}
	if recs, err := openURL(t, url).ReadStream(ctx, "delivery", 0, 0); err != nil || len(recs) != 1 {
		t.Fatalf("another node reads %d events of the held append, %v", len(recs), err)
	}
}
