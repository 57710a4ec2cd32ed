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
	var sb strings.Builder
	if err := writeTable(&sb, []Row{r, plain}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(sb.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header, 2 rows, 1 note; got %d lines:\n%s", len(lines), sb.String())
	}
	// Aligned: every table line has the same width, columns end together.
	for _, l := range lines[1:3] {
		if len([]rune(l)) != len([]rune(lines[0])) {
			t.Errorf("misaligned:\n%s\n%s", lines[0], l)
		}
	}
	if !strings.Contains(lines[1], "0.50×") || !strings.Contains(lines[1], "raw append") || !strings.Contains(lines[2], " - ") {
		t.Errorf("rows:\n%s", sb.String())
	}
	if !strings.Contains(lines[3], "register (embedded): first error: HTTP 500") {
		t.Errorf("note line %q", lines[3])
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
