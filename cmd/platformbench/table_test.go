package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRowRatioAndTable(t *testing.T) {
	lat := &Latencies{}
	lat.Add([]time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 40 * time.Millisecond})
	m := Measured{OK: 3000, Errors: 2, Elapsed: 10 * time.Second, Lat: lat, FirstErr: errors.New("HTTP 500")}
	base := Measured{OK: 6000, Elapsed: 10 * time.Second}
	r := rowOf("register", "embedded", 32, m, "raw append", &base)
	if r.Rate != 300 || r.BaseRate != 600 || r.Ratio != 0.5 || r.P50ms != 4 || r.P99ms != 40 || r.Errors != 2 {
		t.Fatalf("row %+v", r)
	}
	plain := rowOf("raw append", "embedded", 32, base, "", nil)
	restart := Row{Scenario: "restart after kill -9", Store: "embedded", Clients: 1, Note: "/readyz 430 ms after the start"}
	var sb strings.Builder
	if err := writeTable(&sb, []Row{r, plain, restart}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(sb.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("want header, 3 rows, 2 notes; got %d lines:\n%s", len(lines), sb.String())
	}
	// A row measured only in its note shows no rate or latency of zero.
	// cells gives a line's clients, rate, p50 and p99 (the columns after
	// the store; scenario names hold spaces).
	cells := func(l string) string {
		_, after, _ := strings.Cut(l, " embedded ")
		return strings.Join(strings.Fields(after)[:4], " ")
	}
	if got := cells(lines[3]); got != "1 - - -" {
		t.Errorf("restart row %q: want its rate and latencies as -, got %q", lines[3], got)
	}
	if got := cells(lines[2]); got != "32 600 - -" {
		t.Errorf("raw append row %q: want its rate and no latency, got %q", lines[2], got)
	}
	// Aligned: every table line has the same width, columns end together.
	for _, l := range lines[1:4] {
		if len([]rune(l)) != len([]rune(lines[0])) {
			t.Errorf("misaligned:\n%s\n%s", lines[0], l)
		}
	}
	if !strings.Contains(lines[1], "0.50×") || !strings.Contains(lines[1], "raw append") || !strings.Contains(lines[2], " - ") {
		t.Errorf("rows:\n%s", sb.String())
	}
	if !strings.Contains(lines[4], "register (embedded): first error: HTTP 500") {
		t.Errorf("note line %q", lines[4])
	}
}

func TestEventsBehindSumsEveryFollower(t *testing.T) {
	text := `# HELP platform_follower_events_behind Events in the log after the follower's position.
# TYPE platform_follower_events_behind gauge
platform_follower_events_behind{kind="family",name="users"} 12
platform_follower_events_behind{kind="relay",name="kafka"} 3
platform_follower_oldest_unapplied_seconds{kind="family",name="users"} 1.5
`
	if n, ok := eventsBehind(strings.NewReader(text)); !ok || n != 15 {
		t.Fatalf("got %v %v, want 15 true", n, ok)
	}
	if _, ok := eventsBehind(strings.NewReader("platform_up 1\n")); ok {
		t.Fatal("found a metric that is not there")
	}
}
