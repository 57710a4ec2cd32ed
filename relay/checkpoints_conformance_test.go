package relay_test

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/relay/checkpointtest"
)

func TestFileCheckpointsConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) (relay.Checkpoints, relay.Checkpoints, context.Context) {
		dir := t.TempDir()
		cp := relay.NewFileCheckpointsNamed(dir, relay.FeedCheckpointFile)
		return cp, cp, context.Background()
	})
}

func TestUpgradedCheckpointsConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) (relay.Checkpoints, relay.Checkpoints, context.Context) {
		cp := relay.Upgraded{Primary: relay.NewFileCheckpointsNamed(t.TempDir(), "new"), Legacy: relay.NewFileCheckpointsNamed(t.TempDir(), "old")}
		return cp, cp, context.Background()
	})
}

// TestUpgradedResumesFromTheLegacyFile: a cluster upgraded from file
// checkpoints starts its relay where the file says, and from then on the
// new checkpoint alone counts.
func TestUpgradedResumesFromTheLegacyFile(t *testing.T) {
	ctx := context.Background()
	legacy := relay.NewFileCheckpointsNamed(t.TempDir(), relay.FeedCheckpointFile)
	if err := legacy.Save(ctx, events.Position{Commit: 40, Prepare: 40}); err != nil {
		t.Fatal(err)
	}
	cp := relay.Upgraded{Primary: relay.NewFileCheckpointsNamed(t.TempDir(), "shared"), Legacy: legacy}
	if got, err := cp.Load(ctx); err != nil || got != (events.Position{Commit: 40, Prepare: 40}) {
		t.Fatalf("first load %s, %v; want the legacy 40/40", got, err)
	}
	if err := cp.Save(ctx, events.Position{Commit: 41, Prepare: 41}); err != nil {
		t.Fatal(err)
	}
	if got, err := cp.Primary.Load(ctx); err != nil || got != (events.Position{Commit: 41, Prepare: 41}) {
		t.Fatalf("the new checkpoint holds %s, %v; want 41/41", got, err)
	}
	if got, _ := cp.Load(ctx); got != (events.Position{Commit: 41, Prepare: 41}) {
		t.Fatalf("load after a save %s, want 41/41", got)
	}
}

// BenchmarkFileCheckpointSave: a feed's checkpoint save, one op one save
// of a position after the last (count its system calls with strace -c).
func BenchmarkFileCheckpointSave(b *testing.B) {
	ctx := context.Background()
	cp := relay.NewFileCheckpointsNamed(b.TempDir(), relay.FeedCheckpointFile)
	for i := range b.N {
		if err := cp.Save(ctx, events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}); err != nil {
			b.Fatal(err)
		}
	}
}
