package main

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A paced loop with a timeline writes one line per measured call, in the
// order the calls were due, each with its offset into the window and the
// latency the row's percentiles are taken from: the stalled call and the
// ones queued behind it are where they happened.
func TestPacedLoopTimelineHasEveryMeasuredCall(t *testing.T) {
	tl := &Timeline{}
	op := func(ctx context.Context, _, i int) error {
		if i == 3 {
			time.Sleep(120 * time.Millisecond)
		}
		return nil
	}
	m := closedLoop(context.Background(), Phase{Clients: 1, Window: 400 * time.Millisecond, Rate: 100, FromDue: true, Timeline: tl}, op)
	path := filepath.Join(t.TempDir(), "register-paced.csv")
	if err := tl.WriteCSV(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 || lines[0][0] != "at_ms" || lines[0][1] != "latency_ms" || lines[0][2] != "unix_ms" {
		t.Fatalf("header %v", lines[:min(1, len(lines))])
	}
	if got := int64(len(lines) - 1); got != m.OK {
		t.Fatalf("%d timeline lines, %d measured calls", got, m.OK)
	}
	prev, slow := -1e9, 0.0
	for _, l := range lines[1:] {
		at, err1 := strconv.ParseFloat(l[0], 64)
		lat, err2 := strconv.ParseFloat(l[1], 64)
		if err1 != nil || err2 != nil || at < prev {
			t.Fatalf("line %v after offset %v", l, prev)
		}
		prev, slow = at, max(slow, lat)
	}
	if slow < 120 {
		t.Fatalf("slowest call in the timeline %v ms: want the one that slept 120 ms", slow)
	}
}
