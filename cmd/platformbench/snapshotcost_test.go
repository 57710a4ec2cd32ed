package main

import (
	"strings"
	"testing"
)

// A snapshot-cost row charges a read with the platform's, the load
// process's and Postgres' CPU, a pgbench -S transaction with its client's
// and Postgres', and sets the two against each other (not the rates).
func TestSnapshotCostRowSetsProcessCPUAgainstPgbench(t *testing.T) {
	base := costWindow{rate: 5000, pgClient: 20, postgres: 180, xacts: 1}
	read := costWindow{rate: 1000, platform: 300, load: 100, postgres: 400, xacts: 1.25, errors: 2}
	b := costRow("snapshot cost, round 1: pgbench -S", "postgres", 32, base, nil)
	if b.SystemCPUus != 200 || b.PostgresCPUus != 180 || !strings.Contains(b.Note, "pgbench client 20, Postgres 180") {
		t.Fatalf("baseline row %+v", b)
	}
	r := costRow("snapshot cost, round 1: snapshot", "postgres", 32, read, &base)
	if r.SystemCPUus != 800 || r.PlatformCPUus != 300 || r.LoadCPUus != 100 || r.PGXacts != 1.25 || r.Errors != 2 || r.Ratio != 0.2 {
		t.Fatalf("read row %+v", r)
	}
	if !strings.Contains(r.Note, "4.00× pgbench -S's 200") {
		t.Fatalf("read row's note %q: want the process CPU ratio 4.00×", r.Note)
	}
	// The serving processes leave both clients out: (300 + 400) / 180.
	if !strings.Contains(r.Note, "serving processes (platform and Postgres) 700 µs, 3.89× pgbench -S's Postgres 180") {
		t.Fatalf("read row's note %q: want the serving processes' 700 µs, 3.89× Postgres' 180", r.Note)
	}
}
