package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// /proc/stat's cpu line: busy is user+nice+system+irq+softirq, idle is
// idle+iowait, steal apart; cores are the cpuN lines.
func TestParseProcStat(t *testing.T) {
	text := "cpu  100 5 50 1000 40 3 7 2 11 0\ncpu0 50 2 25 500 20 1 3 1 5 0\ncpu1 50 3 25 500 20 2 4 1 6 0\nintr 1 2 3\nctxt 99\n"
	busy, idle, steal, cores, err := parseProcStat(text)
	if err != nil {
		t.Fatal(err)
	}
	if busy != 165*clockTick || idle != 1040*clockTick || steal != 2*clockTick || cores != 2 {
		t.Fatalf("busy %s idle %s steal %s cores %d, want %s %s %s 2", busy, idle, steal, cores, 165*clockTick, 1040*clockTick, 2*clockTick)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu  1 2 3\ncpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 4 5 6 x 8\ncpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 4 5 6 7 8\n"} {
		if _, _, _, _, err := parseProcStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The loop samples the CPU counters exactly at the window's two ends, so
// the warm-up's CPU is not charged to the window.
func TestClosedLoopSamplesCPUOverTheWindow(t *testing.T) {
	var samples atomic.Int64
	start := time.Now()
	probe := func() cpuSample {
		n := samples.Add(1)
		// Counters that grow with time since start: the difference then
		// tells when the two samples were taken.
		el := time.Since(start)
		return cpuSample{busy: el, idle: 2 * el, steal: el, platform: el / 2, load: time.Duration(n) * time.Millisecond, cores: 2}
	}
	m := closedLoop(context.Background(), Phase{Clients: 2, Warmup: 100 * time.Millisecond, Window: 200 * time.Millisecond, CPU: probe},
		func(ctx context.Context, w, i int) error { time.Sleep(time.Millisecond); return nil })
	if samples.Load() != 2 {
		t.Fatalf("%d samples, want one at each end of the window", samples.Load())
	}
	u := m.CPU
	// The window is 200 ms (each sample may come a little late): with the
	// warm-up's 100 ms charged too it would be 300 ms or more.
	if u.Machine < 150*time.Millisecond || u.Machine >= 300*time.Millisecond || u.Idle != 2*u.Machine || u.Steal != u.Machine ||
		u.Load != time.Millisecond || u.Cores != 2 {
		t.Fatalf("window CPU %+v", u)
	}
	if b, st := u.Busy(), u.StealShare(); b != 0.25 || st != 0.25 {
		t.Fatalf("busy %f, steal %f, want 1/4 each", b, st)
	}
	if n := closedLoop(context.Background(), Phase{Clients: 1, Window: 10 * time.Millisecond},
		func(context.Context, int, int) error { return nil }); n.CPU != (CPUUse{}) {
		t.Fatalf("no probe, yet CPU %+v", n.CPU)
	}
}

// A row carries CPU per operation (errors cost CPU too), the ceiling the
// cores give at that cost, and its CPU per operation against the
// baseline's; the table prints them, and "-" where a row has none.
func TestRowCPUColumns(t *testing.T) {
	m := Measured{OK: 9_000, Errors: 1_000, Elapsed: 10 * time.Second,
		CPU: CPUUse{Machine: 4 * time.Second, Idle: 15 * time.Second, Steal: time.Second, Platform: 3 * time.Second, Load: time.Second, Cores: 2}}
	base := Measured{OK: 40_000, Elapsed: 10 * time.Second, CPU: CPUUse{Machine: 4 * time.Second, Idle: 16 * time.Second, Cores: 2}}
	r := rowOf("snapshot", "postgres", 32, m, "pgbench -S", &base)
	if r.CPUus != 400 || r.PlatformCPUus != 300 || r.LoadCPUus != 100 || r.BaseCPUus != 100 || r.Busy != 0.2 || r.Steal != 0.05 || r.Cores != 2 {
		t.Fatalf("row %+v", r)
	}
	if r.Ceiling() != 5_000 || r.CPURatio() != 4 {
		t.Fatalf("ceiling %f, cpu ratio %f", r.Ceiling(), r.CPURatio())
	}
	plain := rowOf("webhook deliveries", "embedded", 8, Measured{OK: 10, Elapsed: time.Second}, "", nil)
	if plain.Ceiling() != 0 || plain.CPURatio() != 0 {
		t.Fatalf("no CPU measured, yet ceiling %f ratio %f", plain.Ceiling(), plain.CPURatio())
	}
	var sb strings.Builder
	if err := writeTable(&sb, []Row{r, plain}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(sb.String(), "\n")
	want := []string{"20%", "400", "300", "5000", "4.00×"}
	fields := strings.Fields(lines[1])
	if got := fields[len(fields)-5:]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("CPU columns %q, want %q in\n%s", got, want, sb.String())
	}
	if got := strings.Fields(lines[2]); strings.Join(got[len(got)-5:], " ") != "- - - - -" {
		t.Fatalf("row without CPU: %q", lines[2])
	}
	if !strings.Contains(lines[3], "snapshot (postgres): the hypervisor took 5% of the cores' time") || strings.Count(sb.String(), "hypervisor") != 1 {
		t.Fatalf("steal note missing or repeated:\n%s", sb.String())
	}
}
