package node

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/healthtech/partner-open-platform/keys"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// DefaultSnapshotInterval is how often embedded read models are snapshotted
// when Config.SnapshotInterval is zero: a crash then replays at most this
// much of the log, and a write costs a few seconds of one core per million
// users, well under 1% of the machine at this pace.
const DefaultSnapshotInterval = 5 * time.Minute

// SnapshotFile is the embedded read models' snapshot in the data directory.
const SnapshotFile = "readmodels.snapshot"

// openSnapshots sets up the embedded read models' snapshot (loadSnapshot
// restores it once the directories exist); a rebuild of any family shreds it.
func (n *Node) openSnapshots(cfg Config, mem *memory.Store) {
	n.snapshots = &memory.Snapshotter{
		Store: mem, Keys: n.Keys, Log: n.StoredEvents, Path: filepath.Join(cfg.DataDir, SnapshotFile),
		Families: projections.Families,
		ErasedBy: []projections.Family{projections.FamilyUsers, projections.FamilyDeliveries, projections.FamilyReports, projections.FamilyOrders},
		Logger:   n.log.With("component", "snapshots"),
	}
	mem.OnReset(func(f projections.Family) {
		n.snapshots.Invalidate(context.Background(), "rebuild of the "+string(f)+" read models")
	})
}

// loadSnapshot restores the snapshot, after its checks against the log,
// into the families and the journaled directories; call it before any
// runner starts.
func (n *Node) loadSnapshot(ctx context.Context, dirs ...*projections.Journal) error {
	n.snapshots.Directories = dirs
	restored, err := n.snapshots.Load(ctx)
	if err != nil {
		return fmt.Errorf("read-model snapshot: %w", err)
	}
	n.restored = restored
	n.Adapters["read models"] = "in memory, restored from " + n.snapshots.Path + " then caught up from the log"
	if !restored {
		n.Adapters["read models"] = "in memory, replayed from the log (snapshots in " + n.snapshots.Path + ")"
	}
	return nil
}

// erasingKeys is the key store as the erasure command sees it: before a
// person's key is destroyed, the read-model snapshot (which holds their
// fields in clear) is shredded and held back until the erasure is applied.
type erasingKeys struct {
	keys      *keys.Keys
	snapshots *memory.Snapshotter
}

func (e erasingKeys) Destroy(ctx context.Context, subject string) error {
	e.snapshots.Erasing(ctx, subject)
	return e.keys.Destroy(ctx, subject)
}
