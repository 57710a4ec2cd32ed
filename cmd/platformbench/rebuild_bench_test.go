package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// BenchmarkRebuildPerEvent counts what a rebuild of every read model costs
// per event of the log inside one process, without the platform binary:
// a log seeded as `platformbench seed` writes it (sealed personal fields,
// deliveries), a node opened on it, and each op the admin rebuild of
// every read model until all are ready again, as `platformbench rebuild`
// drives it (without its snapshot at the end). It reports the allocations and bytes allocated per event of
// the log; under scripts/callgrind-measured.sh the dumps count the
// rebuilds' instructions (the difference of two -test.benchtime counts
// divided by the log's events is one event's). The first rebuild runs
// before the measured ones, so each person's data key is cached as on a
// node that rebuilds within a minute of its last read.
//
// PLATFORM_REBUILD_BENCH_DATA names a seeded data directory to rebuild
// instead (a copy of it: `platformbench seed -data DIR -events N`).
//
//	go test -run '^$' -bench RebuildPerEvent -benchtime 3x ./cmd/platformbench
func BenchmarkRebuildPerEvent(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "data")
	if seeded := os.Getenv("PLATFORM_REBUILD_BENCH_DATA"); seeded != "" {
		// A log seeded once, copied: two builds compared on the same log
		// (a seed's mix of deliveries and users follows its timing).
		if err := os.CopyFS(dir, os.DirFS(seeded)); err != nil {
			b.Fatal(err)
		}
	} else if err := seedCmd(ctx, []string{"-data", dir, "-events", "20000", "-apps", "20", "-webhook-share", "0.1",
		"-workers", "8", "-settle", "1s"}, io.Discard); err != nil {
		b.Fatal(err)
	}
	// No snapshots: the one written as a rebuild ends (not part of the
	// rebuild's rate) would land in the counts or not by timing.
	n, err := node.Open(ctx, node.Config{DataDir: dir, SnapshotInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	api := newPlatform(srv.URL, n.AdminToken, 2)
	head, err := n.StoredEvents.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The rebuild starts through the admin route and is waited for on the
	// runners themselves: polling the route would add its own work, more
	// of it the slower the run (under callgrind).
	// The route answers once every runner was reset, so a runner ready
	// after it has replayed the log.
	rebuild := func() {
		if err := api.admin(ctx, http.MethodPost, "/admin/v1/projections/read_models/rebuild", nil, http.StatusAccepted, nil); err != nil {
			b.Fatal(err)
		}
		wait, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		for _, r := range n.Runners {
			if err := r.WaitReady(wait); err != nil {
				b.Fatal(err)
			}
		}
	}
	rebuild()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	counted := harness.CallgrindMeasured(b)
	b.ResetTimer()
	for range b.N {
		rebuild()
	}
	b.StopTimer()
	counted()
	runtime.ReadMemStats(&after)
	evs := float64(head.Commit) * float64(b.N)
	b.ReportMetric(float64(head.Commit), "log-events")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/evs, "allocs/event")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/evs, "B/event")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/evs, "ns/event")
}
