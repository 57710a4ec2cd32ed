package memory

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// BenchmarkSnapshotLoad reads a snapshot of 20,000 seeded users and
// 100,000 deliveries into an empty store as a start does (the file
// opened, its sections decoded, each read model restored), and reports
// the process's CPU and the allocations per row of the file.
//
//	go test -run '^$' -bench SnapshotLoad -benchmem ./projections/memory
func BenchmarkSnapshotLoad(b *testing.B) {
	ctx := context.Background()
	src := benchDeliveries(b, 100_000)
	benchUsers(b, src, 20_000)
	var h snapfile.Header
	var images []snapfile.Image
	rows := 0
	for _, f := range []projections.ReadModel{projections.ReadModelUsers, projections.ReadModelDeliveries} {
		im, err := src.Image(ctx, f)
		if err != nil {
			b.Fatal(err)
		}
		h.ReadModels = append(h.ReadModels, snapfile.ReadModel{ReadModel: f, Checkpoint: im.Checkpoint, Rows: im.Rows()})
		images = append(images, im)
		rows += im.Rows()
	}
	path := b.TempDir() + "/snap"
	aead := testAEAD(b)
	if _, err := snapfile.Write(path, h, aead, images, nil, nil); err != nil {
		b.Fatal(err)
	}
	images, src = nil, nil
	b.ReportAllocs()
	cpu0, n := processCPU(), 0
	for b.Loop() {
		s := New()
		if _, _, err := snapfile.ReadEach(path, aead, func(rm snapfile.ReadModel, n []int) (snapfile.Restorer, error) {
			return s.Restoring(ctx, rm, n)
		}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(n*rows), "cpu-ns/row")
	b.ReportMetric(float64(rows), "rows")
}

// processCPU is the process's CPU so far, the collector's included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
