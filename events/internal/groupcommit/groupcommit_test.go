package groupcommit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
)

// heldCommitter commits nothing until release is closed, then answers each
// group's appends with their group's size as the revision, and reports
// each group on groups.
func heldCommitter(release <-chan struct{}, groups chan<- []*groupcommit.Append) func(*groupcommit.Queue) {
	return func(q *groupcommit.Queue) {
		<-release
		for first := range q.C() {
			group := q.Gather([]*groupcommit.Append{first}, 3)
			for _, a := range group {
				if a.Ctx.Err() != nil {
					a.Err = a.Ctx.Err()
				} else {
					a.Res = []events.AppendResult{{Revision: uint64(len(group))}}
				}
				a.Done()
			}
			groups <- group
		}
	}
}

func part(stream string) []events.StreamAppend {
	return []events.StreamAppend{{Stream: stream, Expected: events.Any()}}
}

func TestQueuedAppendsShareGroupsAndGetTheirOutcome(t *testing.T) {
	release := make(chan struct{})
	groups := make(chan []*groupcommit.Append, 10)
	q := groupcommit.Start(8, heldCommitter(release, groups))
	type outcome struct {
		res []events.AppendResult
		err error
	}
	out := make(chan outcome, 5)
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		go func() {
			res, err := q.Submit(context.Background(), part(s))
			out <- outcome{res, err}
		}()
	}
	for q.Len() < 5 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	sizes := map[uint64]int{}
	for range 5 {
		o := <-out
		if o.err != nil || len(o.res) != 1 {
			t.Fatalf("outcome %+v, want one result", o)
		}
		sizes[o.res[0].Revision]++
	}
	// Gather takes at most 3: five queued appends are a group of 3 and one of 2.
	if sizes[3] != 3 || sizes[2] != 2 {
		t.Fatalf("appends per group size %v, want 3 in a group of 3 and 2 in a group of 2", sizes)
	}
	q.Close()
}

func TestCloseLetsTheCommitterFinishWhatIsQueued(t *testing.T) {
	release := make(chan struct{})
	groups := make(chan []*groupcommit.Append, 10)
	q := groupcommit.Start(8, heldCommitter(release, groups))
	errs := make(chan error, 2)
	for _, s := range []string{"a", "b"} {
		go func() { _, err := q.Submit(context.Background(), part(s)); errs <- err }()
	}
	for q.Len() < 2 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { q.Close(); close(closed) }()
	for !q.Closed() {
		time.Sleep(time.Millisecond)
	}
	if _, err := q.Submit(context.Background(), part("late")); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("submit after Close: %v, want events.ErrClosed", err)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the committer wrote what was queued")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closed
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("an append queued before Close: %v", err)
		}
	}
}

func TestSubmitEndsWithItsContextOnlyBeforeItIsQueued(t *testing.T) {
	release := make(chan struct{})
	groups := make(chan []*groupcommit.Append, 10)
	q := groupcommit.Start(1, heldCommitter(release, groups))
	defer q.Close()
	defer close(release)

	// The queue holds one: a second waits to be queued, and its context
	// ending ends the wait.
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() { _, err := q.Submit(ctx, part("queued")); queued <- err }()
	for q.Len() < 1 {
		time.Sleep(time.Millisecond)
	}
	waiting, stop := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer stop()
	if _, err := q.Submit(waiting, part("full")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("submit to a full queue: %v, want its context's error", err)
	}
	// The queued one waits for its outcome even though its context ended:
	// the committer reports it (here, as skipped for its context).
	cancel()
	select {
	case err := <-queued:
		t.Fatalf("a queued append returned %v before the committer reached it", err)
	case <-time.After(20 * time.Millisecond):
	}
	release <- struct{}{}
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued append: %v, want the committer's outcome (context.Canceled)", err)
	}
}

func TestDeferrableAppendsCarryWhenTheyWereQueued(t *testing.T) {
	release := make(chan struct{})
	close(release)
	groups := make(chan []*groupcommit.Append, 10)
	q := groupcommit.Start(4, heldCommitter(release, groups))
	defer q.Close()
	before := time.Now()
	if _, err := q.Submit(events.Deferrable(context.Background()), part("lazy")); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Submit(context.Background(), part("plain")); err != nil {
		t.Fatal(err)
	}
	lazy, plain := <-groups, <-groups
	if lazy[0].Queued.Before(before) {
		t.Fatalf("deferrable append queued at %v, want a time from its Submit", lazy[0].Queued)
	}
	if !plain[0].Queued.IsZero() {
		t.Fatalf("plain append carries queued time %v, want zero", plain[0].Queued)
	}
}
