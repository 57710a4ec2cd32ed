package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Failed calls are counted as errors and never timed; successes are timed
// one sample each; warm-up calls are neither. The window is wide enough that
// every client finishes calls of both kinds in it on a loaded machine.
func TestClosedLoopCountsErrorsApart(t *testing.T) {
	var calls atomic.Int64
	m := closedLoop(context.Background(), Phase{Clients: 4, Warmup: 50 * time.Millisecond, Window: 500 * time.Millisecond},
		func(ctx context.Context, w, i int) error {
			calls.Add(1)
			time.Sleep(time.Millisecond)
			if i%2 == 1 {
				return errors.New("refused")
			}
			return nil
		})
	if m.OK == 0 || m.Errors == 0 {
		t.Fatalf("ok %d errors %d: both kinds should occur", m.OK, m.Errors)
	}
	if int64(m.Lat.Count()) != m.OK {
		t.Fatalf("%d samples for %d successes", m.Lat.Count(), m.OK)
	}
	if m.OK+m.Errors >= calls.Load() {
		t.Fatalf("measured %d of %d calls: the warm-up's were counted", m.OK+m.Errors, calls.Load())
	}
	if m.FirstErr == nil || m.Rate() != float64(m.OK)/0.5 {
		t.Fatalf("first error %v, rate %f", m.FirstErr, m.Rate())
	}
}

// The set-up's forEach visits every index once, and stops at the first error.
func TestForEach(t *testing.T) {
	seen := make([]atomic.Int32, 100)
	if err := forEach(context.Background(), 8, 100, func(_ context.Context, i int) error { seen[i].Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("index %d visited %d times", i, seen[i].Load())
		}
	}
	boom := errors.New("boom")
	var after atomic.Int32
	err := forEach(context.Background(), 1, 100, func(_ context.Context, i int) error {
		if i == 3 {
			return boom
		}
		if i > 3 {
			after.Add(1)
		}
		return nil
	})
	if !errors.Is(err, boom) || after.Load() != 0 {
		t.Fatalf("err %v, %d calls after the failure", err, after.Load())
	}
}

// With a rate the loop offers about that many calls, not as many as answer.
func TestClosedLoopPacedOffersTheRate(t *testing.T) {
	var calls atomic.Int64
	m := closedLoop(context.Background(), Phase{Clients: 4, Window: 500 * time.Millisecond, Rate: 40},
		func(ctx context.Context, w, i int) error { calls.Add(1); return nil })
	// 40/s over half a second is at most 20 (+ one per client starting at
	// once); an unpaced loop of no-op calls makes thousands.
	if m.OK == 0 || calls.Load() > 24 {
		t.Fatalf("%d measured of %d calls at 40/s for 0.5 s: want at most 24", m.OK, calls.Load())
	}
}

// A paced call that waited behind a slow one counts its wait when the loop
// times from the due time (FromDue), and not otherwise: one call stalls for
// 150 ms of a 10 ms schedule, so with FromDue the calls queued behind it
// answer 100 ms or more after they were due.
func TestPacedLoopTimesFromTheDueTime(t *testing.T) {
	run := func(fromDue bool) int {
		op := func(ctx context.Context, _, i int) error {
			if i == 2 {
				time.Sleep(150 * time.Millisecond)
			}
			return nil
		}
		m := closedLoop(context.Background(), Phase{Clients: 1, Window: 400 * time.Millisecond, Rate: 100, FromDue: fromDue}, op)
		m.Lat.Quantile(0.5) // sorts
		late := 0
		for _, d := range m.Lat.samples {
			if d >= 100*time.Millisecond {
				late++
			}
		}
		return late
	}
	if late := run(true); late < 2 {
		t.Errorf("from the due time: %d calls at 100 ms or more, want the stalled one and at least one queued behind it", late)
	}
	if late := run(false); late > 1 {
		// Only the stalled call itself (the others start late but run fast),
		// unless the machine stalled a call of its own.
		t.Logf("from the start: %d calls at 100 ms or more", late)
	}
}

// A timeline directory that does not exist yet is made when the flags are
// read, not when the first paced row ends.
func TestTimelineDirIsMadeWithTheFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "timelines", "run")
	if _, _, err := parseRunFlags([]string{"-timeline-dir", dir}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("timeline dir after the flags: %v", err)
	}
}
