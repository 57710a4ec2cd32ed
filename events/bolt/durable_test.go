package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/healthtech/partner-open-platform/events"
)

// TestPublishOnlyDurable holds a group between bbolt's commit and the
// store's publication. From a reader's point of view bbolt is then in the
// state it is in while Tx.writeMeta fdatasyncs the meta page: the new meta
// is already in the shared mapping every new read transaction starts from,
// but the commit may not be on disk yet. No read, no subscriber and no
// appender may learn of the group before it is released.
func TestPublishOnlyDurable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	first := events.Proposed{ID: "00000000-0000-0000-0000-000000000001", Type: "durable.first", Data: []byte(`{}`)}
	second := events.Proposed{ID: "00000000-0000-0000-0000-000000000002", Type: "durable.second", Data: []byte(`{}`)}
	firstRes, err := s.Append(ctx, "d", events.NoStream(), first)
	if err != nil {
		t.Fatal(err)
	}

	// Set before the next Append queues: the queue send orders it before
	// the committer reads it.
	reached, release := make(chan struct{}), make(chan struct{})
	var released atomic.Bool
	var once sync.Once
	let := func() { once.Do(func() { released.Store(true); close(release) }) }
	defer let() // a failed check must not leave Close waiting on the committer
	s.beforePublish = func() {
		close(reached)
		<-release
	}

	type outcome struct {
		res events.AppendResult
		err error
	}
	appended := make(chan outcome, 1)
	go func() {
		res, err := s.Append(ctx, "d", events.Exact(0), second)
		appended <- outcome{res, err}
	}()
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the second append never reached its commit")
	}

	// bbolt already shows the group to any new read transaction: the window
	// this test is about is open.
	var inBolt bool
	if err := s.db.View(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketLog).Cursor().Last()
		inBolt = string(k) == string(be(firstRes.Position.Commit+1))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !inBolt {
		t.Fatal("bbolt does not show the held commit to readers; the test no longer exercises the window")
	}

	// A subscription starting now catches up with ReadAll, as one woken by
	// an earlier group would.
	sub, err := s.SubscribeAll(ctx, firstRes.Position)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	nctx, ncancel := context.WithTimeout(ctx, 100*time.Millisecond)
	r, err := sub.Next(nctx)
	ncancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("subscriber got %s (%v) before its commit was durable", r.ID, err)
	}
	if got, err := s.ReadAll(ctx, firstRes.Position, 0); err != nil || len(got) != 0 {
		t.Errorf("ReadAll after the first event before the commit was durable: %d events, %v", len(got), err)
	}
	if got, err := s.ReadAll(ctx, events.Position{}, 0); err != nil || len(got) != 1 {
		t.Errorf("ReadAll from the start before the commit was durable: %d events, %v; want 1", len(got), err)
	}
	if got, err := s.ReadStream(ctx, "d", 0, 0); err != nil || len(got) != 1 {
		t.Errorf("ReadStream before the commit was durable: %d events, %v; want 1", len(got), err)
	}
	if got, err := s.ReadStream(ctx, "d", 1, 0); err != nil || len(got) != 0 {
		t.Errorf("ReadStream from revision 1 before the commit was durable: %d events, %v", len(got), err)
	}
	if head, err := s.Head(ctx); err != nil || head != firstRes.Position {
		t.Errorf("Head before the commit was durable: %s, %v; want %s", head, err, firstRes.Position)
	}
	select {
	case o := <-appended:
		t.Errorf("append acknowledged before its commit was durable: %+v, %v", o.res, o.err)
	default:
	}

	// Released, everything shows up: the waiting subscriber is woken.
	got := make(chan events.Recorded, 1)
	go func() {
		nctx, ncancel := context.WithTimeout(ctx, 5*time.Second)
		defer ncancel()
		r, err := sub.Next(nctx)
		if err != nil {
			t.Errorf("subscriber after release: %v", err)
		}
		if !released.Load() {
			t.Errorf("subscriber got %s before release", r.ID)
		}
		got <- r
	}()
	time.Sleep(20 * time.Millisecond) // let it wait on the notifier
	let()
	o := <-appended
	if o.err != nil {
		t.Fatal(o.err)
	}
	if r := <-got; r.ID != second.ID {
		t.Fatalf("subscriber after release got %s, want %s", r.ID, second.ID)
	}
	if head, err := s.Head(ctx); err != nil || head != o.res.Position {
		t.Fatalf("Head after release: %s, %v; want %s", head, err, o.res.Position)
	}
	if all, err := s.ReadAll(ctx, firstRes.Position, 0); err != nil || len(all) != 1 || all[0].ID != second.ID {
		t.Fatalf("ReadAll after release: %d events, %v", len(all), err)
	}
	if st, err := s.ReadStream(ctx, "d", 0, 0); err != nil || len(st) != 2 {
		t.Fatalf("ReadStream after release: %d events, %v", len(st), err)
	}
}
