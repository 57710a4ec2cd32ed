// Package checkpointtest is the conformance suite every relay.Checkpoints
// adapter passes: the relay resumes where it was, and its position never
// moves backwards, even under concurrent or late saves.
package checkpointtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/relay"
)

// Open returns a fresh, empty checkpoint, a second handle on the same one
// (what another node or a restarted process sees; may be the same value),
// and the context saves are made in (for a fenced adapter: one carrying a
// current lease); it registers its own cleanup.
type Open func(t *testing.T) (cp, again relay.Checkpoints, ctx context.Context)

// Run holds an adapter to the relay checkpoint contract.
func Run(t *testing.T, open Open) {
	t.Run("StartsAtZero", func(t *testing.T) {
		cp, _, ctx := open(t)
		if got := load(t, ctx, cp); !got.IsZero() {
			t.Fatalf("a new checkpoint is at %s, want the start of the log", got)
		}
	})
	t.Run("SaveThenLoadOnAnotherHandle", func(t *testing.T) {
		cp, again, ctx := open(t)
		save(t, ctx, cp, events.Position{Commit: 7, Prepare: 7})
		save(t, ctx, cp, events.Position{Commit: 9, Prepare: 8})
		if got := load(t, ctx, again); got != (events.Position{Commit: 9, Prepare: 8}) {
			t.Fatalf("another handle loads %s, want 9/8", got)
		}
	})
	t.Run("NeverMovesBackwards", func(t *testing.T) {
		cp, again, ctx := open(t)
		save(t, ctx, cp, events.Position{Commit: 10, Prepare: 10})
		save(t, ctx, again, events.Position{Commit: 4, Prepare: 4}) // a late save of an older batch
		save(t, ctx, again, events.Position{Commit: 10, Prepare: 2})
		if got := load(t, ctx, cp); got != (events.Position{Commit: 10, Prepare: 10}) {
			t.Fatalf("after a late save of an older position the checkpoint is %s, want 10/10", got)
		}
	})
	t.Run("ConcurrentSavesKeepTheHighest", func(t *testing.T) {
		cp, again, ctx := open(t)
		const savers, each = 6, 20
		var wg sync.WaitGroup
		errs := make(chan error, savers)
		var highest events.Position
		var mu sync.Mutex
		for w := range savers {
			c := cp
			if w%2 == 1 {
				c = again
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					p := events.Position{Commit: rand.Uint64N(1000) + 1, Prepare: rand.Uint64N(1000)}
					if err := c.Save(ctx, p); err != nil {
						errs <- fmt.Errorf("save %s: %w", p, err)
						return
					}
					mu.Lock()
					if highest.Less(p) {
						highest = p
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := load(t, ctx, cp); got != highest {
			t.Fatalf("after concurrent saves the checkpoint is %s, want the highest saved, %s", got, highest)
		}
	})
}

func load(t *testing.T, ctx context.Context, cp relay.Checkpoints) events.Position {
	t.Helper()
	p, err := cp.Load(ctx)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

func save(t *testing.T, ctx context.Context, cp relay.Checkpoints, p events.Position) {
	t.Helper()
	if err := cp.Save(ctx, p); err != nil {
		t.Fatalf("save %s: %v", p, err)
	}
}
