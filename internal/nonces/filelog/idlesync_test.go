package filelog_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces/filelog"
)

// An idle node's nonce file is not fsynced: the periodic sync flushes
// only records written since its last fsync, once. Ticks are sent by
// hand; a send returns once the loop took it, so after the next send the
// previous tick's work is done.
func TestPeriodicSyncSkipsAnIdleFile(t *testing.T) {
	tick := make(chan time.Time)
	n, err := filelog.OpenTicked(filepath.Join(t.TempDir(), "nonces.log"), tick)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ticks := func(k int) {
		for range k {
			tick <- time.Time{}
		}
	}
	ticks(4) // idle: nothing was written
	if got := n.PeriodicFsyncs(); got != 0 {
		t.Fatalf("an idle file was fsynced %d times in 3 ticks, want 0", got)
	}
	ctx := context.Background()
	if _, fresh, err := n.Bind(ctx, "s", "k1", "v", time.Now().Add(time.Hour)); err != nil || !fresh {
		t.Fatalf("Bind: fresh %v, err %v", fresh, err)
	}
	ticks(4) // one record written: one fsync, then idle again
	if got := n.PeriodicFsyncs(); got != 1 {
		t.Fatalf("after one write and 3 ticks, %d fsyncs, want 1", got)
	}
	// A replay answered from memory writes nothing either.
	if _, fresh, err := n.Bind(ctx, "s", "k1", "v", time.Now().Add(time.Hour)); err != nil || fresh {
		t.Fatalf("Bind again: fresh %v, err %v", fresh, err)
	}
	if _, fresh, err := n.Bind(ctx, "s", "k2", "v", time.Now().Add(time.Hour)); err != nil || !fresh {
		t.Fatalf("Bind k2: fresh %v, err %v", fresh, err)
	}
	ticks(3)
	if got := n.PeriodicFsyncs(); got != 2 {
		t.Fatalf("after a second write, %d fsyncs, want 2", got)
	}
}
