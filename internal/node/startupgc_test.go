package node

import (
	"os"
	"runtime/debug"
	"testing"
	"time"
)

// After a kill -9 start the process kept pages of about twice its live
// heap (the restore's decode buffers, collected at the raised start-up
// target) for as long as it ran. The last node to finish opening after a
// restore now hands the free pages back, once; a start that restored
// nothing (a fresh or Postgres node, most tests' nodes) pays no extra
// collection.
func TestRestoredStartReturnsItsFreeHeapOnceEveryNodeOpened(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC set: the start-up target is the operator's")
	}
	released := 0
	prev := releaseHeap
	releaseHeap = func() { released++ }
	t.Cleanup(func() { releaseHeap = prev })
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)

	// One node that restored a snapshot: released once, when it caught up.
	done := startupGC(Config{})
	noteRestored()
	if released != 0 {
		t.Fatalf("released %d times before the node caught up", released)
	}
	done()
	done()
	if released != 1 {
		t.Fatalf("released %d times after a restored start, want 1", released)
	}
	if got := debug.SetGCPercent(before); got != before {
		t.Fatalf("collector target %d after the start, want %d back", got, before)
	}

	// A start that restored nothing releases nothing.
	startupGC(Config{})()
	if released != 1 {
		t.Fatalf("released after a start without a restore (%d)", released)
	}

	// Two nodes opening in one process: only the last to finish releases.
	first, second := startupGC(Config{}), startupGC(Config{})
	noteRestored()
	first()
	if released != 1 {
		t.Fatalf("released while another node was still opening (%d)", released)
	}
	second()
	if released != 2 {
		t.Fatalf("released %d times after both nodes opened, want 2", released)
	}

	// Postgres read models restore nothing into the heap.
	pg := startupGC(Config{PostgresURL: "postgres://x"})
	noteRestored()
	pg()
	if released != 2 {
		t.Fatalf("released after a Postgres start (%d)", released)
	}
}

// The free heap goes back only once a /readyz has answered ready: its
// collection of the whole restored heap, run before, holds the listener
// and the first probe back.
func TestFreeHeapGoesBackAfterTheFirstReadyProbe(t *testing.T) {
	prev := readyProbe.Swap(newReadySignal())
	t.Cleanup(func() { readyProbe.Store(prev) })
	released := make(chan struct{})
	releaseAfterReady(func() { close(released) })
	select {
	case <-released:
		t.Fatal("the free heap went back before any ready probe")
	case <-time.After(200 * time.Millisecond):
	}
	noteReady()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the free heap did not go back after a ready probe")
	}
}
