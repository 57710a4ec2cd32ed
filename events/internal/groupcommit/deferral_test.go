package groupcommit_test

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
)

// holdingCommitter passes each gathered group through d.Hold, answers its
// appends and reports the group on groups.
func holdingCommitter(d *groupcommit.Deferral, groups chan<- []string) func(*groupcommit.Queue) {
	return func(q *groupcommit.Queue) {
		for first := range q.C() {
			group := d.Hold(q, q.Gather([]*groupcommit.Append{first}, 16))
			var streams []string
			for _, a := range group {
				streams = append(streams, a.Parts[0].Stream)
				a.Res = []events.AppendResult{{}}
				a.Done()
			}
			groups <- streams
		}
	}
}

// waitFor returns once the deferral holds a group of n, failing if a group
// was committed first.
func waitFor(t *testing.T, waiting <-chan int, groups <-chan []string, n int) {
	t.Helper()
	for {
		select {
		case got := <-waiting:
			if got == n {
				return
			}
		case g := <-groups:
			t.Fatalf("group %v committed before %d deferrable appends waited together", g, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("no group of %d deferrable appends waited", n)
		}
	}
}

// answered waits for one append's outcome, failing if it is held: a
// deferral of an hour is the tests' way of saying "never without company".
func answered(t *testing.T, errs <-chan error, what string) {
	t.Helper()
	select {
	case err := <-errs:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s is still held", what)
	}
}

func submit(q *groupcommit.Queue, ctx context.Context, stream string, errs chan<- error) {
	_, err := q.Submit(ctx, part(stream))
	errs <- err
}

func TestDeferrableAppendsWaitForAPlainOne(t *testing.T) {
	groups, waiting := make(chan []string, 10), make(chan int, 10)
	d := groupcommit.Deferral{Max: time.Hour, Enough: 8, Waiting: func(n int) { waiting <- n }}
	q := groupcommit.Start(16, holdingCommitter(&d, groups))
	defer q.Close()
	lazy, errs := events.Deferrable(context.Background()), make(chan error, 3)
	go submit(q, lazy, "created", errs)
	waitFor(t, waiting, groups, 1)
	go submit(q, lazy, "outcome", errs)
	waitFor(t, waiting, groups, 2)
	go submit(q, context.Background(), "registered", errs)
	if g := <-groups; len(g) != 3 || g[0] != "created" || g[1] != "outcome" || g[2] != "registered" {
		t.Fatalf("group %v, want the two deferrable appends and the plain one, in queue order", g)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestPlainAppendIsNotHeld(t *testing.T) {
	groups := make(chan []string, 10)
	d := groupcommit.Deferral{Max: time.Hour, Enough: 8}
	q := groupcommit.Start(16, holdingCommitter(&d, groups))
	defer q.Close()
	errs := make(chan error, 1)
	go submit(q, context.Background(), "registered", errs)
	answered(t, errs, "a plain append")
	if g := <-groups; len(g) != 1 {
		t.Fatalf("group %v, want the plain append alone", g)
	}
}

func TestDeferrableAppendAloneWaitsAtMostMax(t *testing.T) {
	groups := make(chan []string, 10)
	d := groupcommit.Deferral{Max: 20 * time.Millisecond, Enough: 8}
	q := groupcommit.Start(16, holdingCommitter(&d, groups))
	defer q.Close()
	errs := make(chan error, 1)
	began := time.Now()
	submit(q, events.Deferrable(context.Background()), "created", errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// Bounded below only: how late a timer fires is the machine's.
	if took := time.Since(began); took < d.Max {
		t.Fatalf("a lone deferrable append was answered after %v, before its deferral of %v", took, d.Max)
	}
	if g := <-groups; len(g) != 1 {
		t.Fatalf("group %v, want the deferrable append alone", g)
	}
}

func TestEnoughDeferrableAppendsAreNotHeld(t *testing.T) {
	groups, waiting := make(chan []string, 10), make(chan int, 10)
	d := groupcommit.Deferral{Max: time.Hour, Enough: 3, Waiting: func(n int) { waiting <- n }}
	q := groupcommit.Start(16, holdingCommitter(&d, groups))
	defer q.Close()
	lazy, errs := events.Deferrable(context.Background()), make(chan error, 3)
	go submit(q, lazy, "a", errs)
	waitFor(t, waiting, groups, 1)
	go submit(q, lazy, "b", errs)
	waitFor(t, waiting, groups, 2)
	go submit(q, lazy, "c", errs)
	if g := <-groups; len(g) != 3 {
		t.Fatalf("group %v, want the three deferrable appends", g)
	}
	for range 3 {
		answered(t, errs, "a group of Enough deferrable appends")
	}
}

func TestCloseEndsTheWait(t *testing.T) {
	groups, waiting := make(chan []string, 10), make(chan int, 10)
	d := groupcommit.Deferral{Max: time.Hour, Enough: 8, Waiting: func(n int) { waiting <- n }}
	q := groupcommit.Start(16, holdingCommitter(&d, groups))
	errs := make(chan error, 1)
	go submit(q, events.Deferrable(context.Background()), "created", errs)
	waitFor(t, waiting, groups, 1)
	q.Close()
	answered(t, errs, "a deferrable append held at Close")
	if g := <-groups; len(g) != 1 {
		t.Fatalf("group %v, want the held append", g)
	}
}

func TestZeroDeferralHoldsNothing(t *testing.T) {
	groups := make(chan []string, 10)
	var d groupcommit.Deferral
	q := groupcommit.Start(16, holdingCommitter(&d, groups))
	defer q.Close()
	errs := make(chan error, 1)
	go submit(q, events.Deferrable(context.Background()), "created", errs)
	answered(t, errs, "a deferrable append with no deferral")
}
