package node

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeRebuilds is a rebuild route whose rebuilds end when told.
type fakeRebuilds struct{ found bool }

func (f fakeRebuilds) Rebuild(context.Context, string) (any, bool, error) { return nil, f.found, nil }

// gcTarget is a collector target a test can read, as SetGCPercent sets it.
type gcTarget struct {
	mu  sync.Mutex
	now int
}

func (g *gcTarget) set(p int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev := g.now
	g.now = p
	return prev
}

func (g *gcTarget) get() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

func waitTarget(t *testing.T, g *gcTarget, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.get() != want {
		if time.Now().After(deadline) {
			t.Fatalf("collector target %d, want %d", g.get(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRebuildRaisesTheCollectorTargetUntilEveryReadModelIsReady: an
// embedded node's rebuild runs at rebuildGCPercent from its request until
// every runner is ready again, two overlapping rebuilds until the later
// is done, and the target goes back to what it was; an unknown
// projection, an operator's GOGC, a target already as high and a node
// draining before the read models are ready leave it or put it back.
func TestRebuildRaisesTheCollectorTargetUntilEveryReadModelIsReady(t *testing.T) {
	ctx := context.Background()
	newRebuilder := func(found bool, readyCh <-chan struct{}, stop <-chan struct{}, start int) (*gcRebuilder, *gcTarget) {
		target := &gcTarget{now: start}
		g := newGCRebuilder(fakeRebuilds{found: found}, func(ctx context.Context) error {
			select {
			case <-readyCh:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, stop)
		g.setGCPC = target.set
		return g, target
	}

	t.Run("until ready", func(t *testing.T) {
		t.Setenv("GOGC", "")
		ready := make(chan struct{})
		g, target := newRebuilder(true, ready, nil, 200)
		if _, found, err := g.Rebuild(ctx, "read_models"); !found || err != nil {
			t.Fatalf("rebuild: %v %v", found, err)
		}
		if target.get() != rebuildGCPercent {
			t.Fatalf("target during the rebuild %d, want %d", target.get(), rebuildGCPercent)
		}
		if _, _, err := g.Rebuild(ctx, "users"); err != nil { // a second one meanwhile
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if target.get() != rebuildGCPercent {
			t.Fatalf("target before any read model is ready %d", target.get())
		}
		close(ready)
		waitTarget(t, target, 200)
	})
	t.Run("unknown projection", func(t *testing.T) {
		t.Setenv("GOGC", "")
		g, target := newRebuilder(false, make(chan struct{}), nil, 200)
		_, _, _ = g.Rebuild(ctx, "nothing")
		if target.get() != 200 {
			t.Fatalf("target after an unknown projection %d", target.get())
		}
	})
	t.Run("operator's GOGC", func(t *testing.T) {
		t.Setenv("GOGC", "150")
		g, target := newRebuilder(true, make(chan struct{}), nil, 150)
		_, _, _ = g.Rebuild(ctx, "read_models")
		if target.get() != 150 {
			t.Fatalf("target with GOGC set %d", target.get())
		}
	})
	t.Run("already higher", func(t *testing.T) {
		t.Setenv("GOGC", "")
		g, target := newRebuilder(true, make(chan struct{}), nil, 800)
		_, _, _ = g.Rebuild(ctx, "read_models")
		if target.get() != 800 {
			t.Fatalf("target already at 800: now %d", target.get())
		}
	})
	t.Run("drained", func(t *testing.T) {
		t.Setenv("GOGC", "")
		stop := make(chan struct{})
		g, target := newRebuilder(true, make(chan struct{}), stop, 200)
		_, _, _ = g.Rebuild(ctx, "read_models")
		if target.get() != rebuildGCPercent {
			t.Fatalf("target during the rebuild %d", target.get())
		}
		close(stop)
		waitTarget(t, target, 200)
	})
}
