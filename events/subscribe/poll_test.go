package subscribe_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// pollOnly is a store whose subscriptions may only be polled: a Next is
// reported, so a runner that reads them through a goroutine blocked in Next
// fails the test.
type pollOnly struct {
	*memory.Store
	t *testing.T
}

func (s pollOnly) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	sub, err := s.Store.SubscribeAll(ctx, after)
	if err != nil {
		return nil, err
	}
	return noNext{Poller: sub.(events.Poller), t: s.t}, nil
}

type noNext struct {
	events.Poller
	t *testing.T
}

func (s noNext) Next(context.Context) (events.Recorded, error) {
	s.t.Error("the runner read a pollable subscription with Next")
	return events.Recorded{}, events.ErrClosed
}

// A runner reads a subscription that can be polled itself, between its
// waits: what is appended before and while it runs is applied in order,
// and a rebuild asked for while it waits for appends is done.
func TestRunnerPollsAPollableSubscription(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	store := pollOnly{Store: mem, t: t}
	reg := catalog.Registry()
	for i := range 5 {
		appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	rec, r := recordReady(t, store, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last events.Position
	for i := range 5 {
		last = appendApp(t, store, reg, fmt.Sprint("later-", i))
	}
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	n, batches := rec.seen()
	if n != 10 {
		t.Fatalf("applied %d events, want 10", n)
	}
	var prev events.Position
	for _, b := range batches {
		for _, env := range b {
			if !prev.Less(env.Position) {
				t.Fatalf("event at %v applied after %v", env.Position, prev)
			}
			prev = env.Position
		}
	}
	if err := r.Rebuild(ctx); err != nil {
		t.Fatalf("rebuild while waiting for appends: %v", err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}
