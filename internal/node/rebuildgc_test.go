package node

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeRebuilds is a rebuild route whose rebuilds end when told.
type fakeRebuilds struct{ found bool }

func (f fakeRebuilds) Rebuild(context.Context, string) (any, bool, error) { return nil, f.found, nil }

// setting is a runtime setting a test can read, as SetGCPercent and
// SetMemoryLimit set it (a negative value reads it, as SetMemoryLimit's).
type setting[T int | int64] struct {
	mu  sync.Mutex
	now T
}

func (g *setting[T]) set(v T) T {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev := g.now
	if v >= 0 {
		g.now = v
	}
	return prev
}

func (g *setting[T]) get() T {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

// gcTarget is the collector's target; memLimit the soft memory limit.
type (
	gcTarget = setting[int]
	memLimit = setting[int64]
)

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
		g.setLimit = func(int64) int64 { return math.MaxInt64 }
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

// TestRebuildBoundsTheRaisedTargetByTheMachinesMemory: the raised target
// lets the heap grow to five times the live heap, which at 10,000,000
// events is past the machine's memory, so an embedded node's rebuild sets a
// soft memory limit while it lasts and puts the one before back; an
// operator's GOMEMLIMIT, or a limit already in force, is left alone.
func TestRebuildBoundsTheRaisedTargetByTheMachinesMemory(t *testing.T) {
	ctx := context.Background()
	const bound = 12 << 30
	newRebuilder := func(readyCh <-chan struct{}, start int64) (*gcRebuilder, *gcTarget, *memLimit) {
		target, limit := &gcTarget{now: 200}, &memLimit{now: start}
		g := newGCRebuilder(fakeRebuilds{found: true}, func(ctx context.Context) error {
			select {
			case <-readyCh:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, nil)
		g.setGCPC, g.setLimit, g.heapLimit = target.set, limit.set, func() int64 { return bound }
		return g, target, limit
	}
	t.Run("until ready", func(t *testing.T) {
		t.Setenv("GOGC", "")
		t.Setenv("GOMEMLIMIT", "")
		ready := make(chan struct{})
		g, target, limit := newRebuilder(ready, math.MaxInt64)
		if _, _, err := g.Rebuild(ctx, "read_models"); err != nil {
			t.Fatal(err)
		}
		if limit.get() != bound {
			t.Fatalf("memory limit during the rebuild %d, want %d", limit.get(), bound)
		}
		close(ready)
		waitTarget(t, target, 200)
		if limit.get() != math.MaxInt64 {
			t.Fatalf("memory limit after the rebuild %d, want none", limit.get())
		}
	})
	for _, tc := range []struct {
		name, env string
		start     int64
	}{
		{"operator's GOMEMLIMIT", "4GiB", 4 << 30},
		{"a limit in force", "", 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", tc.env)
			g, _, limit := newRebuilder(make(chan struct{}), tc.start)
			_, _, _ = g.Rebuild(ctx, "read_models")
			if limit.get() != tc.start {
				t.Fatalf("memory limit %d during the rebuild, want %d left alone", limit.get(), tc.start)
			}
		})
	}
}

// TestRebuildHeapLimitIsAShareOfTheMachinesMemory: the limit is half of
// what the machine (or its cgroup) has, never below three times the heap in
// use.
func TestRebuildHeapLimitIsAShareOfTheMachinesMemory(t *testing.T) {
	total := machineMemory()
	if total <= 0 {
		t.Skip("no /proc/meminfo")
	}
	got := rebuildHeapLimit()
	if got < total/2-1 || got > total {
		t.Fatalf("limit %d for %d bytes of memory", got, total)
	}
}
