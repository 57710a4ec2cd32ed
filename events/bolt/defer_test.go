package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
)

// deferStore opens a store whose deferrable appends wait up to deferFor
// and whose committer reports on the returned channel each time a group
// of deferrable appends waits (with its size). The group commit window is
// off, so only deferral groups appends.
func deferStore(t *testing.T, path string, deferFor time.Duration) (*Store, <-chan int) {
	t.Helper()
	s, _ := groupStore(t, path, 0)
	deferring := make(chan int, 64)
	s.deferral.Max = deferFor
	s.deferral.Waiting = func(n int) { deferring <- n }
	return s, deferring
}

// waitDeferring waits until the committer holds n deferrable appends, or
// fails if the append started in done was answered first.
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
		}
	}
}

// TestDeferrableAppendsRideAPlainOnesCommit: two deferrable appends wait
// for a plain one and all three are written by one transaction; the plain
// one is not held.
func TestDeferrableAppendsRideAPlainOnesCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, deferring := deferStore(t, filepath.Join(t.TempDir(), "events.db"), time.Hour)
	lazy := events.Deferrable(ctx)
	done := make(chan error, 3)
	go func() { done <- appendOne(lazy, s, "created-1") }()
	waitDeferring(t, deferring, done, 1)
	go func() { done <- appendOne(lazy, s, "created-2") }()
	waitDeferring(t, deferring, done, 2)
	if err := appendOne(ctx, s, "registered"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.commits.Load(); got != 1 {
		t.Fatalf("two deferrable appends and a plain one took %d commits, want 1", got)
	}
	for _, stream := range []string{"created-1", "created-2", "registered"} {
		recs, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil || len(recs) != 1 {
			t.Fatalf("read %s: %d events, %v", stream, len(recs), err)
		}
	}
}

// TestDeferrableAppendAloneIsCommitted: a deferrable append that no plain
// one joins waits, and is then committed on its own.
func TestDeferrableAppendAloneIsCommitted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, deferring := deferStore(t, filepath.Join(t.TempDir(), "events.db"), 5*time.Millisecond)
	if err := appendOne(events.Deferrable(ctx), s, "created"); err != nil {
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
		t.Fatalf("the deferrable append took %d commits, want 1", got)
	}
	if recs, err := s.ReadStream(ctx, "created", 0, 0); err != nil || len(recs) != 1 {
		t.Fatalf("read: %d events, %v", len(recs), err)
	}
}

// TestPlainAppendsNeverWaitForDeferrable: plain appends, alone or queued
// with deferrable ones, are committed without waiting for anything.
func TestPlainAppendsNeverWaitForDeferrable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, deferring := deferStore(t, filepath.Join(t.TempDir(), "events.db"), time.Hour)
	for _, stream := range []string{"a", "b", "c"} {
		if err := appendOne(ctx, s, stream); err != nil {
			t.Fatal(err)
		}
	}
	// A plain append first in the queue, a deferrable one behind it: the
	// group holds a plain append, so it is committed at once.
	held, hold := make(chan struct{}), make(chan struct{})
	first := true
	s.beforePublish = func() {
		if first {
			first = false
			close(held)
			<-hold
		}
	}
	done := make(chan error, 3)
	go func() { done <- appendOne(ctx, s, "holder") }()
	<-held
	go func() { done <- appendOne(ctx, s, "plain") }()
	for s.queue.Len() < 1 {
		time.Sleep(time.Millisecond)
	}
	go func() { done <- appendOne(events.Deferrable(ctx), s, "lazy") }()
	for s.queue.Len() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case n := <-deferring:
		t.Fatalf("a group of %d holding a plain append waited", n)
	default:
	}
	if got := s.commits.Load(); got != 5 {
		t.Fatalf("took %d commits, want 5 (three alone, the holder, then plain and lazy together)", got)
	}
}

// TestDeferrableCloseWhileWaiting: closing the store while a deferrable
// append waits commits it: it is answered and durable.
func TestDeferrableCloseWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "events.db")
	s, deferring := deferStore(t, path, time.Hour)
	done := make(chan error, 1)
	go func() { done <- appendOne(events.Deferrable(ctx), s, "created") }()
	waitDeferring(t, deferring, done, 1)
	closeWhileWaiting(t, ctx, s, path, done, "created")
}

// TestEnoughDeferrableAppendsCommitWithoutWaiting: groupcommit.DeferEnough
// deferrable appends share one transaction at once, with no plain append
// to wait for (a drained backlog's outcomes): none waits out its deferral.
func TestEnoughDeferrableAppendsCommitWithoutWaiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, deferring := deferStore(t, filepath.Join(t.TempDir(), "events.db"), time.Hour)
	lazy := events.Deferrable(ctx)
	done := make(chan error, groupcommit.DeferEnough)
	go func() { done <- appendOne(lazy, s, "created-0") }()
	waitDeferring(t, deferring, done, 1)
	for i := 1; i < groupcommit.DeferEnough; i++ {
		go func() { done <- appendOne(lazy, s, fmt.Sprintf("created-%d", i)) }()
	}
	for range groupcommit.DeferEnough {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("%d deferrable appends still wait for a plain one", groupcommit.DeferEnough)
		}
	}
	if got := s.commits.Load(); got != 1 {
		t.Fatalf("%d deferrable appends took %d commits, want 1", groupcommit.DeferEnough, got)
	}
}
