package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A window is charged from a quiet platform to the end of its own drain:
// the CPU the previous window's deliveries spend while it waits is not in
// it, the CPU of its own calls and of the deliveries they left behind is,
// and that CPU is shared over every call the loop made (warm-up and the
// calls in flight at the close included), the window's calls taking their
// part.
func TestChargedWindowExcludesThePreviousDrain(t *testing.T) {
	var platform atomic.Int64  // the platform's CPU counter, in ns
	var allocated atomic.Int64 // the platform's bytes allocated
	var calls atomic.Int64
	var mu sync.Mutex
	previous, own, closed := 3, 2, false
	h := windowHooks{bound: time.Minute, poll: time.Millisecond,
		probe: func() cpuSample {
			return cpuSample{platform: time.Duration(platform.Load()), busy: time.Duration(platform.Load()), idle: time.Second, cores: 2}
		},
		heap: func() (heapSample, bool) { return heapSample{bytes: float64(allocated.Load()), objects: 1}, true },
		quiet: func(context.Context) bool {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !closed && previous > 0: // the previous window's deliveries going out
				previous--
				platform.Add(int64(10 * time.Second))
				allocated.Add(1 << 30)
				return false
			case closed && own > 0: // this window's deliveries
				own--
				platform.Add(int64(time.Second))
				allocated.Add(1000)
				return false
			}
			return true
		},
		atClose: func() { mu.Lock(); closed = true; mu.Unlock() },
	}
	w := chargedWindow(context.Background(), h, Phase{Clients: 2, Warmup: 20 * time.Millisecond, Window: 60 * time.Millisecond},
		func(context.Context, int, int) error {
			time.Sleep(time.Millisecond)
			platform.Add(int64(time.Millisecond))
			allocated.Add(100)
			calls.Add(1)
			return nil
		})
	m := w.Measured
	if !w.quietBefore || !w.quietAfter || previous != 0 || own != 0 {
		t.Fatalf("quiet before %v after %v; polls left %d, %d", w.quietBefore, w.quietAfter, previous, own)
	}
	// Per call: its own 100 bytes and its share of the 2,000 its
	// deliveries allocated, none of the previous drain's 3 GiB.
	if want := 100 + 2000/float64(calls.Load()); w.alloc.bytes < want-1e-6 || w.alloc.bytes > want+1e-6 || w.alloc.objects != 0 {
		t.Fatalf("allocated %+v per call, want %v bytes", w.alloc, want)
	}
	if m.OK == 0 || m.OK >= calls.Load() {
		t.Fatalf("%d calls in the window of %d made: the warm-up's should be apart", m.OK, calls.Load())
	}
	caused := time.Duration(calls.Load())*time.Millisecond + 2*time.Second
	want := time.Duration(float64(caused) * float64(m.OK) / float64(calls.Load()))
	if d := m.CPU.Platform - want; d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("charged %s of platform CPU, want %s (its calls' share of %s; the previous drain's 30s excluded)", m.CPU.Platform, want, caused)
	}
	if m.CPU.Cores != 2 || m.perOp(m.CPU.Platform) != m.perOp(m.CPU.Machine) {
		t.Fatalf("cpu %+v", m.CPU)
	}

	// A platform that never gets quiet: both waits end at their bound and
	// say so.
	h = windowHooks{bound: 30 * time.Millisecond, poll: time.Millisecond, quiet: func(context.Context) bool { return false }}
	w = chargedWindow(context.Background(), h, Phase{Clients: 1, Window: 10 * time.Millisecond},
		func(context.Context, int, int) error { return nil })
	if w.quietBefore || w.quietAfter || w.CPU != (CPUUse{}) || w.alloc != (heapSample{}) {
		t.Fatalf("never quiet, yet quiet before %v after %v (or measured without probes: %+v, %+v)", w.quietBefore, w.quietAfter, w.CPU, w.alloc)
	}
}

// The ledger forgets a delivery once its receiver has it: a register's
// once any delivery named the user, a PATCH's once the user has had that
// many profile updates.
func TestTenantLedgerDropsWhatArrived(t *testing.T) {
	r := &Receiver{named: map[int64]bool{}, byUser: map[int64][]receipt{}}
	var l tenantLedger
	l.add(pendingDelivery{rcv: r, user: 1}, pendingDelivery{rcv: r, user: 2, profile: 1}, pendingDelivery{rcv: r, user: 2, profile: 2})
	if n := l.outstanding(); n != 3 {
		t.Fatalf("%d outstanding, want 3", n)
	}
	r.named[1], r.named[2] = true, true
	r.byUser[2] = []receipt{{}}
	if n := l.outstanding(); n != 1 {
		t.Fatalf("%d outstanding after a register's and one PATCH's delivery, want 1", n)
	}
	r.byUser[2] = append(r.byUser[2], receipt{})
	if n := l.outstanding(); n != 0 {
		t.Fatalf("%d outstanding, want 0", n)
	}
	l.add(pendingDelivery{rcv: r, user: 3})
	l.forget()
	if n := l.outstanding(); n != 0 {
		t.Fatalf("%d outstanding after forget", n)
	}
}

// Rows: a rate and CPU per call are the medians of the rounds; a many-app
// round is set against the mean of the one-app rounds on either side of
// it, and the row's ratio is the median of those; undelivered PATCHes and
// registers count as errors.
func TestTenantRowsMedianOfAlternatedRounds(t *testing.T) {
	m := func(ok int64, cpu time.Duration) Measured {
		return Measured{OK: ok, Elapsed: 10 * time.Second, Lat: &Latencies{}, CPU: CPUUse{Platform: cpu, Machine: 2 * cpu, Idle: time.Second, Cores: 2}}
	}
	round := func(reg, snap, patch int64) TenantRound {
		return TenantRound{Register: m(reg, time.Duration(reg)*time.Millisecond), Snapshot: m(snap, time.Duration(snap)*100*time.Microsecond),
			Webhooks: m(patch, time.Duration(patch)*time.Millisecond), Load: "1.00 1.00 1.00"}
	}
	one := TenantRun{Apps: 1, Users: 100, Rounds: []TenantRound{round(1000, 10000, 500), round(3000, 10000, 500), round(1000, 10000, 500)},
		RSSBefore: 100 << 20, RSSApps: 101 << 20, RSSUsers: 111 << 20, RSS: 200 << 20}
	many := TenantRun{Apps: 50, Users: 100, Rounds: []TenantRound{round(1800, 9000, 450), round(1000, 5000, 250)},
		RSSBefore: 111 << 20, RSSApps: 116 << 20, RSSUsers: 126 << 20, RSS: 200 << 20}
	many.Rounds[1].Missing, many.Rounds[1].RegisterMissing, many.Bad = 3, 2, 1
	many.Rounds[1].Webhooks.CPU.Platform = 500 * time.Millisecond // 2 ms per PATCH, twice one app's
	for i := range one.Rounds {
		one.Rounds[i].Alloc[1] = heapSample{bytes: 10 << 10, objects: 100}
	}
	many.Rounds[0].Alloc[1] = heapSample{bytes: 11 << 10, objects: 110}
	many.Rounds[1].Alloc[1] = heapSample{bytes: 12 << 10, objects: 120}
	rows := tenantRows(one, many, "embedded", Options{Clients: 32, PatchClients: 8, Drain: time.Minute})
	if len(rows) != 6 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0].Ratio != 0 || rows[0].Scenario != "tenants (1 app, 100 users): register" || rows[3].Scenario != "tenants (50 apps, 100 users): register" {
		t.Fatalf("rows %q, %q; baseline ratio %v", rows[0].Scenario, rows[3].Scenario, rows[0].Ratio)
	}
	// One app's register: 100, 300 and 100 per second, median 100.
	if rows[0].Rate != 100 || rows[0].PlatformCPUus != 1000 {
		t.Fatalf("one app register: %v/s, %v µs", rows[0].Rate, rows[0].PlatformCPUus)
	}
	// Many apps' register: 180/s against (100+300)/2 and 100/s against
	// (300+100)/2: ratios 0.9 and 0.5, median 0.7.
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	if !near(rows[3].Ratio, 0.7) || !strings.Contains(rows[3].Note, "ratio per round 0.70× (0.50–0.90×)") {
		t.Fatalf("register ratio %v, note %q", rows[3].Ratio, rows[3].Note)
	}
	if !near(rows[4].Ratio, 0.7) || !near(rows[5].Ratio, 0.7) {
		t.Fatalf("snapshot ratio %v, PATCH ratio %v, want 0.7 each", rows[4].Ratio, rows[5].Ratio)
	}
	if !strings.Contains(rows[4].Note, "allocated 11.5 KB (11.0–12.0) and 115 objects per call") ||
		!strings.Contains(rows[4].Note, "allocation per call ÷ one app's 1.15× (1.10–1.20×)") || strings.Contains(rows[3].Note, "allocat") {
		t.Fatalf("allocation notes: snapshot %q; register %q", rows[4].Note, rows[3].Note)
	}
	if rows[5].PlatformCPUus != 1500 || !strings.Contains(rows[5].Note, "÷ one app's 1.50× (1.00–2.00×)") {
		t.Fatalf("PATCH CPU %v, note %q", rows[5].PlatformCPUus, rows[5].Note)
	}
	if rows[5].Errors != 4 || rows[3].Errors != 2 {
		t.Fatalf("errors: PATCH %d (want 3 undelivered + 1 bad), register %d (want 2)", rows[5].Errors, rows[3].Errors)
	}
	if !strings.Contains(rows[3].Note, "+5.0 MB for its 50 apps (102.4 KB each), +10.0 MB for its 100 users (102.4 KB each)") {
		t.Fatalf("memory note %q", rows[3].Note)
	}
}

func TestHeapCounters(t *testing.T) {
	text := "# HELP go_memstats_alloc_bytes_total x\ngo_memstats_alloc_bytes 5\ngo_memstats_alloc_bytes_total 1.5e+09\ngo_memstats_mallocs_total 42\n"
	if h, ok := heapCounters(strings.NewReader(text)); !ok || h.bytes != 1.5e9 || h.objects != 42 {
		t.Fatalf("%+v %v", h, ok)
	}
	if _, ok := heapCounters(strings.NewReader("go_memstats_mallocs_total 42\n")); ok {
		t.Fatal("one counter missing, yet ok")
	}
}

func TestParseVmRSS(t *testing.T) {
	if got := parseVmRSS("Name:\tplatform\nVmPeak:\t  9 kB\nVmRSS:\t  2048 kB\n"); got != 2048*1024 {
		t.Fatalf("rss = %d", got)
	}
	if got := parseVmRSS("Name: x\n"); got != 0 {
		t.Fatalf("no line: %d", got)
	}
}

// Windows of one call add up: operations, time, latencies and CPU.
func TestStraddleAddsBothWindows(t *testing.T) {
	a := Measured{OK: 100, Elapsed: 10 * time.Second, Lat: &Latencies{}, CPU: CPUUse{Platform: time.Second, Machine: 2 * time.Second, Cores: 2}}
	a.Lat.Add([]time.Duration{time.Millisecond, 3 * time.Millisecond})
	b := Measured{OK: 300, Errors: 2, Elapsed: 10 * time.Second, Lat: &Latencies{}, CPU: CPUUse{Platform: 3 * time.Second, Machine: 4 * time.Second, Cores: 2}}
	b.Lat.Add([]time.Duration{2 * time.Millisecond})
	m := straddle(a, b)
	if m.Rate() != 20 || m.Errors != 2 || m.Elapsed != 20*time.Second {
		t.Fatalf("rate %v errors %d elapsed %v; want 20/s, 2, 20s", m.Rate(), m.Errors, m.Elapsed)
	}
	if m.CPU.Platform != 4*time.Second || m.CPU.Machine != 6*time.Second || m.CPU.Cores != 2 {
		t.Fatalf("cpu %+v", m.CPU)
	}
	if got := m.Lat.Quantile(0.5); got != 2*time.Millisecond {
		t.Fatalf("median %v, want 2ms of the three samples", got)
	}
}
