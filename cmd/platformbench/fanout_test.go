package main

import (
	"strings"
	"testing"
	"time"
)

// The fan-out rows charge the deliveries with what each app's window cost
// beyond the endpoint-less app's, and count undelivered writes and bad
// signatures as errors.
func TestFanoutRowsCompareDeliveriesWithTheWriteAlone(t *testing.T) {
	run := func(endpoints int, platformCPU time.Duration, missing int, bad int64) FanoutResult {
		m := Measured{OK: 1000, Elapsed: 10 * time.Second, Lat: &Latencies{},
			CPU: CPUUse{Machine: 4 * time.Second, Idle: 16 * time.Second, Platform: platformCPU, Cores: 2}}
		return FanoutResult{Endpoints: endpoints, Writes: m, Missing: missing, Bad: bad}
	}
	rows := fanoutRows([]FanoutResult{
		run(0, 300*time.Millisecond, 0, 0),   // 300 µs per write
		run(1, 500*time.Millisecond, 0, 0),   // +200 µs: one delivery
		run(10, 1100*time.Millisecond, 2, 1), // +800 µs: ten deliveries
	}, "embedded", Options{PatchClients: 8, Drain: time.Minute}, 100)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	if !strings.Contains(rows[1].Note, "one delivery costs 200 µs") {
		t.Errorf("one endpoint: %q", rows[1].Note)
	}
	if !strings.Contains(rows[2].Note, "cost 800 µs") || !strings.Contains(rows[2].Note, "4.00× one delivery's") {
		t.Errorf("ten endpoints: %q", rows[2].Note)
	}
	if rows[2].Errors != 3 || rows[0].Errors != 0 {
		t.Errorf("errors = %d, %d; want 3 (2 missing + 1 bad), 0", rows[2].Errors, rows[0].Errors)
	}
	if rows[1].Scenario != "webhook fan-out: 1 endpoint, 100 PATCH/s offered" {
		t.Errorf("scenario %q", rows[1].Scenario)
	}
}

// The many-app population's rows are set against the one-app
// population's, call by call, and count undelivered PATCHes as errors.
func TestTenantRowsCompareWithOneApp(t *testing.T) {
	m := func(ok int64) Measured { return Measured{OK: ok, Elapsed: 10 * time.Second, Lat: &Latencies{}} }
	one := TenantRun{Apps: 1, Users: 100, Register: m(1000), Snapshot: m(10000), Webhooks: m(500)}
	many := TenantRun{Apps: 50, Users: 100, Register: m(900), Snapshot: m(10000), Webhooks: m(250), Missing: 3, RSS: 64 << 20}
	rows := tenantRows(one, many, "embedded", Options{Clients: 32, PatchClients: 8, Drain: time.Minute})
	if len(rows) != 6 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0].Ratio != 0 || rows[0].Scenario != "tenants (1 app, 100 users): register" {
		t.Errorf("baseline row %q has ratio %v", rows[0].Scenario, rows[0].Ratio)
	}
	for i, want := range []float64{0.9, 1, 0.5} {
		if got := rows[3+i].Ratio; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: ratio %v, want %v", rows[3+i].Scenario, got, want)
		}
	}
	if rows[5].Errors != 3 || !strings.Contains(rows[3].Note, "64 MB") {
		t.Errorf("errors %d, note %q", rows[5].Errors, rows[3].Note)
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
