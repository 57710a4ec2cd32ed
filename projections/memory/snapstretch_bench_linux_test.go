package memory_test

import (
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// BenchmarkPacedSnapshotWrite is a write as the snapshotter's loop makes
// it, of the store BenchmarkSnapshotWrite fills, without sleeping in its
// rests: it reports the writing thread's CPU between two rests (the
// longest stretch, and the 99th percentile), which is how long a request
// on a two-core node may wait for the core the write holds, and the rests
// per write. Thread CPU, not wall time, so a loaded machine does not move it.
func BenchmarkPacedSnapshotWrite(b *testing.B) {
	f := newSnapFixture(b)
	f.fillBulk(b, 100_000)
	s := f.snapshotter()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var stretches []time.Duration
	last := threadCPU()
	pause := func(time.Duration) {
		now := threadCPU()
		stretches = append(stretches, now-last)
		last = now
	}
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.store.UpdateAudit(f.ctx, "audit", f.event(b), func(projections.AuditTx) error { return nil }); err != nil {
			b.Fatal(err)
		}
		last = threadCPU()
		if err := memory.PacedWrite(f.ctx, s, pause); err != nil {
			b.Fatal(err)
		}
		pause(0) // the stretch after the last rest
	}
	b.StopTimer()
	slices.Sort(stretches)
	b.ReportMetric(float64(stretches[len(stretches)-1].Microseconds()), "longest-cpu-µs")
	b.ReportMetric(float64(stretches[len(stretches)*99/100].Microseconds()), "p99-cpu-µs")
	b.ReportMetric(float64(len(stretches))/float64(b.N), "rests/op")
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
