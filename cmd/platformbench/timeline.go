package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Timeline keeps every measured call's offset into the window (from when it
// was due, for a paced loop) with its latency, so a p99 can be told apart:
// a few stalls every so often, or a latency spread over the whole window.
type Timeline struct {
	mu    sync.Mutex
	start time.Time // the measured window's start
	calls []timedCall
}

type timedCall struct {
	At, Lat time.Duration
}

func (t *Timeline) add(cs []timedCall) {
	t.mu.Lock()
	t.calls = append(t.calls, cs...)
	t.mu.Unlock()
}

// WriteCSV writes at_ms,latency_ms,unix_ms lines in call order (unix_ms is
// at_ms as wall-clock time, to line calls up with the platform's log).
func (t *Timeline) WriteCSV(path string) error {
	t.mu.Lock()
	cs := slices.Clone(t.calls)
	t.mu.Unlock()
	slices.SortFunc(cs, func(a, b timedCall) int { return int(a.At - b.At) })
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "at_ms,latency_ms,unix_ms")
	for _, c := range cs {
		fmt.Fprintf(w, "%.3f,%.3f,%d\n", ms(c.At), ms(c.Lat), t.start.Add(c.At).UnixMilli())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("timeline: %w", err)
	}
	return f.Close()
}
