package storage_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// A rebuild shreds the snapshot; its replay counts toward the next one
// (SnapshotEvents, the events read by the read models together divided by
// their number), whichever read model was rebuilt, so a kill -9 after a
// rebuild replays a tail, not the whole log.
// Here only deliveries is rebuilt: the other read models read nothing new,
// and the snapshot must still come back without waiting for the interval.
func TestSnapshotFollowsTheRebuildOfAnyReadModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, node.SnapshotFile)
	p := harness.Start(t, node.Config{DataDir: dir, SnapshotInterval: time.Hour, SnapshotEvents: 2})
	defer p.Stop()
	a := p.CreateApp("snap")
	fillModels(t, a, 0, 5)
	// Let the snapshots settle: once none was written for 2 s, the last one
	// is fewer than SnapshotEvents events behind what the read models read,
	// and nothing new comes (the log does not grow).
	last, since := "", time.Now()
	for time.Since(since) < 2*time.Second {
		h, err := snapfile.ReadHeader(path)
		if err == nil && h.KeySubject != last {
			last, since = h.KeySubject, time.Now()
		}
		if time.Since(since) > 30*time.Second {
			t.Fatal("the snapshots did not settle")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := p.Admin("POST", "/admin/v1/projections/deliveries/rebuild", nil); res.Status != http.StatusAccepted {
		t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
	}
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("15 s after the rebuild of deliveries, with an hour's interval, no snapshot was written again")
}

// A read model that applies few event types (orders, benefits, audit)
// passes most of the log without applying anything; its checkpoint still
// follows the position it reached, so the snapshot a graceful stop writes
// holds every read model at the log's end and the next start replays
// nothing. Before, such a read model's checkpoint moved only with its own
// events or once a second, and every start read again the stretch of
// others' events it had passed (11,000-30,000 events at a million).
func TestRestartAfterAStopReplaysNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir, SnapshotInterval: time.Hour})
	a := p.CreateApp("snap")
	fillModels(t, a, 0, 10)
	images(t, p) // the log settled and every read model at its end
	p.Stop()     // writes the snapshot

	q := harness.Start(t, node.Config{DataDir: dir, SnapshotInterval: time.Hour})
	defer q.Stop()
	if !restoredFromSnapshot(q) {
		t.Fatalf("restart did not restore the snapshot: %s", q.Node.Adapters["read models"])
	}
	if err := q.Node.WaitCaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range projections.ReadModels {
		if n := q.Node.ReadModelRunners[f].Stats().Applied; n != 0 {
			t.Errorf("read model %s replayed %d events after a graceful stop", f, n)
		}
	}
}
