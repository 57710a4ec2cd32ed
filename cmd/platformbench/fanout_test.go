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
