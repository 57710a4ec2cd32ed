package node

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// TestConvertSnapshot rewrites the read-model snapshot of the data
// directory PLATFORM_SNAPSHOT_CONVERT_DIR in the current format, same
// header, key and rows, without starting a node: it makes the "after"
// copy of a measuring directory (see TestMeasureRestart) whose log, key
// log and webhook checkpoint are byte for byte the "before" copy's, so two
// binaries' starts differ only in the snapshot's format. Skipped unless
// the variable is set.
func TestConvertSnapshot(t *testing.T) {
	dir := os.Getenv("PLATFORM_SNAPSHOT_CONVERT_DIR")
	if dir == "" {
		t.Skip("PLATFORM_SNAPSHOT_CONVERT_DIR is unset")
	}
	ctx := context.Background()
	cfg := Config{DataDir: dir}
	store, _, err := openEventStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sealer, err := openSealer(ctx, cfg, store, catalog.Registry(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	backend, err := keyfiles.Open(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	path := filepath.Join(dir, SnapshotFile)
	h, err := snapfile.ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version == snapfile.Version {
		t.Skipf("%s is in the current format already", path)
	}
	key, err := datakeys.New(backend, sealer, sealer.Previous()...).Lookup(ctx, h.KeySubject)
	if err != nil {
		t.Fatal(err)
	}
	h, images, dirs, err := snapfile.Read(path, key.AEAD)
	if err != nil {
		t.Fatal(err)
	}
	// Through a store, so the images are in the order this version
	// writes them (deliveries in feed order).
	mem := memory.New()
	for i, im := range images {
		if err := mem.Restore(ctx, im); err != nil {
			t.Fatal(err)
		}
		if images[i], err = mem.Image(ctx, im.ReadModel); err != nil {
			t.Fatal(err)
		}
	}
	from := h.Version
	size, err := snapfile.Write(path, h, key.AEAD, images, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, err = snapfile.ReadHeader(path); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: format %d rewritten as format %d, %d bytes", path, from, h.Version, size)
}
