package filelog_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces/filelog"
)

// waits hands the sync loop its waits and ends them by hand.
type waits struct {
	mu    sync.Mutex
	armed []chan time.Time
}

func (w *waits) wait() <-chan time.Time {
	c := make(chan time.Time, 1)
	w.mu.Lock()
	w.armed = append(w.armed, c)
	w.mu.Unlock()
	return c
}

// end ends the i-th wait armed.
func (w *waits) end(i int) {
	w.mu.Lock()
	c := w.armed[i]
	w.mu.Unlock()
	c <- time.Time{}
}

func (w *waits) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.armed)
}

// until polls cond (the sync loop runs on its own goroutine).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// An idle node's nonce file arms no timer and is not fsynced: the wait
// before an fsync starts at the first write since the last one, records
// written meanwhile ride with it, and a replay answered from memory writes
// and waits for nothing.
func TestPeriodicSyncArmsNoTimerForAnIdleFile(t *testing.T) {
	var w waits
	n, err := filelog.OpenWaiting(filepath.Join(t.TempDir(), "nonces.log"), w.wait)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	time.Sleep(50 * time.Millisecond) // idle
	if got := w.count(); got != 0 {
		t.Fatalf("an idle file armed %d waits, want 0", got)
	}
	ctx := context.Background()
	bind := func(key string, wantFresh bool) {
		t.Helper()
		if _, fresh, err := n.Bind(ctx, "s", key, "v", time.Now().Add(time.Hour)); err != nil || fresh != wantFresh {
			t.Fatalf("Bind %s: fresh %v, err %v", key, fresh, err)
		}
	}
	bind("k1", true)
	bind("k2", true)
	until(t, "a wait armed after the writes", func() bool { return w.count() >= 1 })
	if got := n.PeriodicFsyncs(); got != 0 {
		t.Fatalf("%d fsyncs before the wait ended, want 0", got)
	}
	w.end(0)
	until(t, "one fsync after the wait", func() bool { return n.PeriodicFsyncs() == 1 })
	// The second write may have landed after the wait began: at most one
	// more wait, which ends without an fsync. Then nothing more is armed.
	time.Sleep(50 * time.Millisecond)
	armed := w.count()
	if armed > 2 {
		t.Fatalf("%d waits armed for two writes, want at most 2", armed)
	}
	if armed == 2 {
		w.end(1)
		time.Sleep(50 * time.Millisecond)
		if got := n.PeriodicFsyncs(); got != 1 {
			t.Fatalf("%d fsyncs with nothing new written, want 1", got)
		}
	}
	bind("k1", false) // a replay answered from memory writes nothing
	time.Sleep(50 * time.Millisecond)
	if got := w.count(); got != armed {
		t.Fatalf("a replay armed a wait (%d, was %d)", got, armed)
	}
	bind("k3", true)
	until(t, "a wait for the third write", func() bool { return w.count() == armed+1 })
	w.end(armed)
	until(t, "a second fsync", func() bool { return n.PeriodicFsyncs() == 2 })
}
