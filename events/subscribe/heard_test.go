package subscribe_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	leasememory "github.com/healthtech/partner-open-platform/internal/lease/memory"
)

// told is a Shared whose announcements the test sends.
type told struct{ updates chan subscribe.Progress }

func (s *told) Progress(context.Context, string) (subscribe.Progress, error) {
	return subscribe.Progress{}, nil
}
func (s *told) Announce(context.Context, string, subscribe.Progress) error { return nil }
func (s *told) Watch(string) (<-chan subscribe.Progress, func()) {
	return s.updates, func() {}
}
func (s *told) RequestRebuild(context.Context, string) (int64, error) {
	return 0, errors.New("not here")
}

// closes says whether ch closes within a bound far beyond what it takes.
func closes(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// A watcher that reads the batches a runner applies (AfterApply) learns
// the other moves from Heard: the runner's own applies leave Heard open
// (while Changed closes), progress announced by the owner on another node
// closes it.
func TestHeardClosesAtMovesTheRunnerDidNotApply(t *testing.T) {
	store, reg := memory.New(), catalog.Registry()
	defer store.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	own := subscribe.NewRunner(store, reg, &recorder{}, log, nil)
	var mu sync.Mutex
	var seen []string
	own.AfterApply(func(batch []events.Envelope) {
		mu.Lock()
		defer mu.Unlock()
		for _, env := range batch {
			seen = append(seen, env.Stream)
		}
	})
	heard, changed := own.Heard(), own.Changed()
	run(t, own)
	first := appendApp(t, store, reg, "app-1")
	last := appendApp(t, store, reg, "app-2")
	if err := own.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(seen) != 2 || seen[0] != "app-1" || seen[1] != "app-2" {
		t.Errorf("AfterApply saw %v, want app-1 and app-2", seen)
	}
	mu.Unlock()
	if !closes(changed) {
		t.Error("Changed stayed open after the runner applied two events")
	}
	select {
	case <-heard:
		t.Error("Heard closed at the runner's own applies")
	default:
	}

	// Another node holds the projection: this runner follows its owner.
	leases := leasememory.New()
	if _, err := leases.Acquire(ctx, subscribe.LeaseName("recorder"), "other", time.Hour); err != nil {
		t.Fatal(err)
	}
	shared := &told{updates: make(chan subscribe.Progress)}
	follower := subscribe.NewRunner(store, reg, &recorder{}, log, nil)
	follower.Own(subscribe.Ownership{Leases: leases, Holder: "this", TTL: time.Hour, Shared: shared})
	run(t, follower)
	announce := func(pos events.Position) {
		select {
		case shared.updates <- subscribe.Progress{Position: pos, Owner: "other"}:
		case <-ctx.Done():
			t.Fatal("the follower does not listen for announcements")
		}
	}
	announce(first)
	if err := follower.WaitFor(ctx, first); err != nil {
		t.Fatal(err)
	}
	heard = follower.Heard()
	announce(last)
	if !closes(heard) {
		t.Error("Heard stayed open after the owner on another node announced its progress")
	}
}
