package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// groupStore opens a store whose group commit window is window and whose
// committer reports each wait on the returned channel.
func groupStore(t *testing.T, path string, window time.Duration) (*Store, <-chan int) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	waits := make(chan int, 64)
	s.window = func(time.Duration) time.Duration { return window }
	s.waiting = func(n int) { waits <- n }
	return s, waits
}

func appendOne(ctx context.Context, s *Store, stream string) error {
	_, err := s.Append(ctx, stream, events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "group.appended", Data: []byte(`{}`)})
	return err
}

// largeGroup commits one group of n appends: the committer is held after
// the commit of a first append until n more are queued.
func largeGroup(t *testing.T, ctx context.Context, s *Store, n int) {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.beforePublish = func() {
		once.Do(func() {
			close(held)
			<-hold
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	wg.Add(1)
	go func() { defer wg.Done(); errs <- appendOne(ctx, s, "hold") }()
	<-held
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- appendOne(ctx, s, fmt.Sprintf("large-%d", i)) }()
	}
	for s.queue.Len() < n {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitWaitsWhileGroupsWereLarger: after a group of three, an
// append that finds nobody else queued waits for more appends instead of
// paying a transaction of its own; the two that come share its commit,
// and none of the three is answered before that commit.
func TestGroupCommitWaitsWhileGroupsWereLarger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, waits := groupStore(t, filepath.Join(t.TempDir(), "events.db"), time.Hour)
	largeGroup(t, ctx, s, 3)
	before := s.commits.Load()

	done := make(chan error, 3)
	go func() { done <- appendOne(ctx, s, "alone") }()
	select {
	case n := <-waits:
		if n != 1 {
			t.Fatalf("the committer waited with %d appends, want 1", n)
		}
	case err := <-done:
		t.Fatalf("the lone append was committed alone (err %v) after a group of three", err)
	}
	go func() { done <- appendOne(ctx, s, "second") }()
	go func() { done <- appendOne(ctx, s, "third") }()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.commits.Load() - before; got != 1 {
		t.Fatalf("three appends took %d commits, want 1", got)
	}
	for _, stream := range []string{"alone", "second", "third"} {
		recs, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil || len(recs) != 1 {
			t.Fatalf("read %s: %d events, %v", stream, len(recs), err)
		}
	}
}

// TestGroupCommitLoneWriterNeverWaits: a writer appending one event at a
// time makes groups of one and is never held for company.
func TestGroupCommitLoneWriterNeverWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, waits := groupStore(t, filepath.Join(t.TempDir(), "events.db"), time.Hour)
	for i := range 20 {
		if err := appendOne(ctx, s, fmt.Sprintf("serial-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case n := <-waits:
		t.Fatalf("a serial writer's group of %d waited", n)
	default:
	}
	if got := s.commits.Load(); got != 20 {
		t.Fatalf("20 serial appends took %d commits, want 20", got)
	}
}

// TestGroupCommitWindowEnds: the append that waited alone is committed
// when the window ends.
func TestGroupCommitWindowEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, waits := groupStore(t, filepath.Join(t.TempDir(), "events.db"), 5*time.Millisecond)
	largeGroup(t, ctx, s, 3)
	before := s.commits.Load()
	if err := appendOne(ctx, s, "alone"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-waits:
		if n != 1 {
			t.Fatalf("the committer waited with %d appends, want 1", n)
		}
	default:
		t.Fatal("the lone append after a group of three did not wait")
	}
	if got := s.commits.Load() - before; got != 1 {
		t.Fatalf("the lone append took %d commits, want 1", got)
	}
}

// TestGroupCommitCloseWhileWaiting: closing the store while an append
// waits for company commits it: it is answered and durable.
func TestGroupCommitCloseWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "events.db")
	s, waits := groupStore(t, path, time.Hour)
	largeGroup(t, ctx, s, 3)
	done := make(chan error, 1)
	go func() { done <- appendOne(ctx, s, "alone") }()
	select {
	case <-waits:
	case err := <-done:
		t.Fatalf("the lone append was committed alone (err %v) after a group of three", err)
	}
	closeWhileWaiting(t, ctx, s, path, done, "alone")
}

// closeWhileWaiting closes s while the append to stream, answered on done,
// waits in its committer, and checks that it is answered and durable.
func closeWhileWaiting(t *testing.T, ctx context.Context, s *Store, path string, done <-chan error, stream string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting append: %v", err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	recs, err := s2.ReadStream(ctx, stream, 0, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("after reopening: %d events of the waiting append, %v", len(recs), err)
	}
}
