package main

import (
	"strings"
	"testing"
	"time"
)

// The fan-out ratio is taken per alternated pair (10 endpoints ÷ the one
// endpoint run before it), reported as the median with its range, and a
// run without CPU (no -platform-pid) gives no ratio.
func TestFanoutDrainRows(t *testing.T) {
	run := func(n int, cpu time.Duration) FanoutDrainRun {
		return FanoutDrainRun{Endpoints: n, Events: 100, Queued: 100 * n, Received: 100 * n, Took: time.Second, CPU: cpu, LoadBefore: "1.00 1.00 1.00"}
	}
	runs := []FanoutDrainRun{
		run(1, 20*time.Millisecond), run(10, 60*time.Millisecond), // 300 µs/event ÷ 200: 3×
		run(1, 10*time.Millisecond), run(10, 20*time.Millisecond), // 2×
		run(1, 10*time.Millisecond), run(10, 50*time.Millisecond), // 5×
	}
	rows := fanoutDrainRows(runs, "embedded", Options{PatchClients: 8})
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if rows[0].PlatformCPUus != 100 || rows[1].PlatformCPUus != 500 {
		t.Fatalf("median CPU per event %v and %v, want 100 and 500", rows[0].PlatformCPUus, rows[1].PlatformCPUus)
	}
	if rows[1].Ratio != 3 || !strings.Contains(rows[1].Note, "3.00× (runs 2.00–5.00×") {
		t.Fatalf("ratio %v, note %q", rows[1].Ratio, rows[1].Note)
	}
	if !strings.HasSuffix(rows[0].Note, "drain: 1.00 1.00 1.00; 1.00 1.00 1.00; 1.00 1.00 1.00") {
		t.Fatalf("each row lists its own drains' load averages: %q", rows[0].Note)
	}
	if rows[0].Ratio != 0 || rows[0].Errors != 0 {
		t.Fatalf("one-endpoint row: ratio %v, errors %d", rows[0].Ratio, rows[0].Errors)
	}
	short := run(10, 0)
	short.Received, short.Bad = 990, 2
	rows = fanoutDrainRows([]FanoutDrainRun{run(1, 10*time.Millisecond), short}, "embedded", Options{})
	if rows[1].Ratio != 0 || rows[1].Errors != 12 {
		t.Fatalf("unmeasured run: ratio %v, errors %d (want 0, 12)", rows[1].Ratio, rows[1].Errors)
	}
}

func TestSpread(t *testing.T) {
	if m, l, h := spread([]float64{4, 1, 3, 2}); m != 2.5 || l != 1 || h != 4 {
		t.Fatalf("spread = %v %v %v", m, l, h)
	}
	if m, l, h := spread(nil); m != 0 || l != 0 || h != 0 {
		t.Fatalf("empty spread = %v %v %v", m, l, h)
	}
}
