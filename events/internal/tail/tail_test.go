package tail_test

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TryNext hands out what was appended without waiting; at the log's end it
// returns a channel that the next append closes, and the store's Close ends
// the subscription.
func TestTryNextWaitsOnlyThroughItsChannel(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	if _, err := store.Append(ctx, "s", events.Any(), events.Proposed{ID: "e1", Type: "t", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	sub, err := store.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	p := sub.(events.Poller)
	if rec, wake, err := p.TryNext(ctx); err != nil || wake != nil || rec.ID != "e1" {
		t.Fatalf("TryNext = %s, wake %v, %v; want e1 at once", rec.ID, wake, err)
	}
	_, wake, err := p.TryNext(ctx)
	if err != nil || wake == nil {
		t.Fatalf("TryNext at the end = wake %v, %v; want a channel to wait on", wake, err)
	}
	if closed(wake) {
		t.Fatal("the wake channel is closed before any append")
	}
	if _, err := store.Append(ctx, "s", events.Any(), events.Proposed{ID: "e2", Type: "t", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if !closed(wake) {
		t.Fatal("the append did not close the wake channel")
	}
	if rec, wake, err := p.TryNext(ctx); err != nil || wake != nil || rec.ID != "e2" {
		t.Fatalf("TryNext after the append = %s, wake %v, %v; want e2", rec.ID, wake, err)
	}
	_, wake, _ = p.TryNext(ctx)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(wake) {
		t.Fatal("the store's Close did not close the wake channel")
	}
	if _, _, err := p.TryNext(ctx); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("TryNext after Close: %v, want ErrClosed", err)
	}
}
